import AgentCore
import Capture
import DBus

/// `doctor`'s check of a Bluetooth LE source (and onboarding's, of the sensor it sets up):
/// connect, wait for one heart rate, let go.
struct BLESensorCheck {
    let source: HealthSourceConfig
    let bus: DBusBus

    func check(name: String) -> DeviceCheck {
        let target = BLESensorTarget(address: source.address, name: source.address == nil ? source.name : nil)
        return Self.check(BLESensorProbe(target: target, bus: bus).run(), name: name)
    }

    /// A probe's result as a check. No heart rate is a failure: the source would record
    /// nothing now (it keeps trying, so the fix is about the sensor, not the agent).
    static func check(_ result: Result<BLESensorProbe.Reading, BLESensorProbe.ProbeFailure>, name: String) -> DeviceCheck {
        switch result {
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
            return DeviceCheck(name: name, stream: .health, outcome: .failed, detail: failure.description,
                               fix: "wear the sensor (wet a strap's electrodes, put it on) and check again with 'ariata-agent doctor'; a sensor connected to a phone or watch may not advertise: disconnect it there")
        }
    }
}
