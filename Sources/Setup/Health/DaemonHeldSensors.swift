import AgentCore
import Capture
import Foundation
import Reports

/// The heart-rate sensors a running daemon is connected to, as its `status` has them: a
/// sensor takes one connection at a time, so `doctor` reports these from the daemon's
/// status instead of connecting (which would take the strap from the daemon).
struct DaemonHeldSensors {
    /// By source name; empty when the daemon is not running.
    let connected: [String: SensorStatus]

    init(config: AgentConfig) {
        let report = StatusReader().read(config: config, configFile: "")
        let sensors = report.daemon.running ? report.streams.first { $0.name == StreamName.health.rawValue }?.sensors : nil
        self.init(daemonSensors: sensors ?? [])
    }

    /// - Parameter daemonSensors: the sensors a running daemon's status lists.
    init(daemonSensors sensors: [SensorStatus]) {
        // A silent sensor is connected too: connecting and letting go would cut the daemon's link.
        let held = sensors.filter { $0.connected || $0.state == .silent }
        connected = Dictionary(held.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The check of `settings` from the daemon's status, nil when the daemon does not hold it.
    func check(_ settings: BLESourceSettings) -> DeviceCheck? {
        guard let sensor = connected[settings.name] else { return nil }
        var detail = "connected to the running daemon (from its status; doctor leaves the connection alone)"
        if let battery = sensor.battery { detail += ", battery \(battery) %" }
        if sensor.hrvWindowsDropped > 0 { detail += ", \(sensor.hrvWindowsDropped) HRV windows without enough clean beats" }
        let name = "health ble \(settings.address ?? settings.name)"
        if sensor.state == .silent {
            let address = sensor.address ?? settings.address ?? "<address>"
            return DeviceCheck(name: name, stream: .health, outcome: .failed,
                               detail: "connected to the running daemon but it sends no heart rate (from its status)",
                               fix: "if it is worn, BlueZ's copy of its services may be stale (after a firmware update): run 'bluetoothctl remove \(address)', then 'ariata-agent onboard --ble-scan' to pair it again")
        }
        if sensor.batteryLow {
            return DeviceCheck(name: name, stream: .health, outcome: .warning, detail: detail, fix: "charge or replace the sensor's battery")
        }
        return DeviceCheck(name: name, stream: .health, outcome: .ok, detail: detail)
    }
}
