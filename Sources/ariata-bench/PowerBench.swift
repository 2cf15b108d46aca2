import AgentCore
import Foundation
import Platform
import Rigs

/// Cost of the power policy's read, the work `[power]` adds to each maintenance round:
/// `swift run -c release ariata-bench power [--reads 2000] [--sysfs PATH]`. Without
/// --sysfs, a laptop-like fake tree (AC, BAT0, a mouse battery) in a temporary directory;
/// with it, the machine's own /sys/class/power_supply. The read happens inside the health
/// check's existing wake-up, so it adds no wake-ups of its own.
enum PowerBench {
    static func run(reads: Int, sysfs: String?) throws {
        let dir = try TemporaryDirectory("power-bench")
        let path = sysfs ?? dir.file("power_supply")
        if sysfs == nil {
            for (name, values) in [("AC", ["type": "Mains", "online": "0"]),
                                   ("BAT0", ["type": "Battery", "present": "1", "capacity": "57", "status": "Discharging"]),
                                   ("hidpp_battery_0", ["type": "Battery", "scope": "Device", "capacity": "80", "status": "Discharging"])] {
                try FileManager.default.createDirectory(atPath: "\(path)/\(name)", withIntermediateDirectories: true)
                for (key, value) in values { try "\(value)\n".write(toFile: "\(path)/\(name)/\(key)", atomically: true, encoding: .utf8) }
            }
        }
        var reading = PowerSupply.read(path: path)
        let cpuBefore = ExportBench.cpuSeconds()
        let started = Date()
        for _ in 0..<reads {
            reading = PowerSupply.read(path: path)
            _ = PowerPolicy(reading: reading, config: PowerConfig(), queueNearLimit: false)
        }
        let cpu = (ExportBench.cpuSeconds() - cpuBefore) / Double(reads)
        let wall = Date().timeIntervalSince(started) / Double(reads)
        print(String(format: "measured: power read of %@ (%@): %.3f ms CPU, %.3f ms wall per tick; at the default check_interval "
                     + "of 30 s: %.3f s CPU per hour, 0 extra wake-ups", path, "\(reading)", cpu * 1_000, wall * 1_000, cpu * 120))
    }
}
