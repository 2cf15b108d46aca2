import AgentCore
import Capture
import DBus

/// `doctor`'s check of a Bluetooth LE source: connect, wait for one heart rate, let go.
struct BLESensorCheck {
    let source: HealthSourceConfig
    let bus: DBusBus

    func check(name: String) -> DeviceCheck {
        let target = BLESensorTarget(address: source.address, name: source.address == nil ? source.name : nil)
        switch BLESensorProbe(target: target, bus: bus).run() {
        case .success(let reading):
            var detail = "notifies: \(reading.heartRate) bpm"
            if reading.contact == .notDetected { detail += " (no skin contact)" }
            detail += reading.hasRRIntervals ? ", with beat intervals (HRV)" : ", without beat intervals (no HRV)"
            if let battery = reading.battery {
                detail += ", battery \(battery) %"
                if battery < BLESource.lowBattery {
                    return DeviceCheck(name: name, stream: .health, outcome: .warning, detail: detail, fix: "charge or replace the sensor's battery")
                }
            }
            return DeviceCheck(name: name, stream: .health, outcome: .ok, detail: detail)
        case .failure(let failure):
            return DeviceCheck(name: name, stream: .health, outcome: .warning, detail: failure.description,
                               fix: "wear the sensor (moisten a strap's electrodes) and run the check again")
        }
    }
}
