import Foundation

/// What the machine runs on, read from the kernel's power-supply class
/// (/sys/class/power_supply/<name>/{type,online,present,capacity,status,scope}).
public struct PowerReading: Sendable, Equatable {
    public enum Source: String, Sendable, Equatable {
        case mains, battery
    }

    public var source: Source
    /// The system battery's charge in percent (the lowest, with several), nil without one.
    public var batteryPercent: Int?
    /// The kernel's `status` of that battery: Charging, Discharging, Full, Not charging, Unknown.
    public var batteryStatus: String?

    public init(source: Source, batteryPercent: Int? = nil, batteryStatus: String? = nil) {
        self.source = source
        self.batteryPercent = batteryPercent
        self.batteryStatus = batteryStatus
    }
}

public enum PowerSupply {
    /// Reads the tree at `path`. No system battery means mains (a desktop, a Pi on a
    /// power adapter). With a battery, an external supply (Mains, USB, USB-C…) that says
    /// `online` 1 means mains; when none is listed at all, the battery's own `status`
    /// decides (Discharging means battery). Batteries of peripherals (`scope` Device: a
    /// mouse, a headset) are not the system's and are ignored. A tree that cannot be read
    /// at all reads as mains: the agent then behaves as it always did.
    public static func read(path: String) -> PowerReading {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return PowerReading(source: .mains) }
        var externalSeen = false, externalOnline = false
        var batteries: [(percent: Int?, status: String?)] = []
        for name in names.sorted() {
            let dir = "\(path)/\(name)"
            guard let type = value(dir, "type") else { continue }
            if type == "Battery" {
                guard value(dir, "scope") != "Device", value(dir, "present") != "0" else { continue }
                batteries.append((value(dir, "capacity").flatMap { Int($0) }, value(dir, "status")))
            } else {
                externalSeen = true
                if value(dir, "online") == "1" { externalOnline = true }
            }
        }
        guard !batteries.isEmpty else { return PowerReading(source: .mains) }
        let lowest = batteries.min { ($0.percent ?? 101) < ($1.percent ?? 101) } ?? batteries[0]
        let onBattery = externalSeen ? !externalOnline : batteries.contains { $0.status == "Discharging" }
        return PowerReading(source: onBattery ? .battery : .mains, batteryPercent: lowest.percent, batteryStatus: lowest.status)
    }

    private static func value(_ dir: String, _ attribute: String) -> String? {
        (try? String(contentsOfFile: "\(dir)/\(attribute)", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
