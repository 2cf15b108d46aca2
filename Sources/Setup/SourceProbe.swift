import AgentCore
import Capture
import DBus
import Foundation

/// Can a health source be read? A file must be readable (or its directory exist, for a
/// file a logger will create); a serial port must open the way the serial source opens
/// it (`SerialPort`: raw mode at the configured baud), so the check cannot pass where the
/// stream would fail.
struct SourceProbe {
    let source: HealthSourceConfig
    let serviceUser: String
    /// Where BlueZ is (the system bus; a test's private one).
    var bus: DBusBus = .system

    func check() -> DeviceCheck {
        let name = "health \(source.kind.rawValue) \(source.kind == .ble ? source.address ?? source.name : source.path)"
        switch source.kind {
        case .ble:
            return BLESensorCheck(source: source, bus: bus).check(name: name)
        case .file:
            if FileManager.default.fileExists(atPath: source.path) {
                if access(source.path, R_OK) == 0 {
                    return DeviceCheck(name: name, stream: .health, outcome: .ok, detail: "readable")
                }
                return DeviceCheck(name: name, stream: .health, outcome: .failed,
                                   detail: "\(AgentErrorCode.permissionDenied.rawValue) not readable",
                                   fix: "sudo setfacl -m u:\(serviceUser):r \(source.path) (or chmod o+r)")
            }
            let directory = (source.path as NSString).deletingLastPathComponent
            if FileManager.default.fileExists(atPath: directory) {
                return DeviceCheck(name: name, stream: .health, outcome: .warning,
                                   detail: "does not exist yet; it is read from its start when it appears")
            }
            return DeviceCheck(name: name, stream: .health, outcome: .failed, detail: "neither the file nor its directory exists",
                               fix: "correct [[health.source]] path")
        case .serial:
            switch SerialPort.open(source.path, baud: source.baud) {
            case .success(let port):
                port.close()
                return DeviceCheck(name: name, stream: .health, outcome: .ok, detail: "opens at \(source.baud) baud")
            case .failure(.permissionDenied):
                return DeviceCheck(name: name, stream: .health, outcome: .failed,
                                   detail: "\(AgentErrorCode.permissionDenied.rawValue) permission denied",
                                   fix: "sudo usermod -aG dialout \(serviceUser), then restart the service")
            case .failure(.missing):
                return DeviceCheck(name: name, stream: .health, outcome: .warning,
                                   detail: "cannot open: no such device (unplugged? it is reopened when it appears)",
                                   fix: "plug the device in, or correct [[health.source]] path")
            case .failure(.unsupportedBaud(let baud)):
                return DeviceCheck(name: name, stream: .health, outcome: .failed, detail: "\(baud) baud is not a speed termios knows",
                                   fix: "set [[health.source]] baud to a standard speed such as 9600 or 115200")
            case .failure(.other(let message)):
                return DeviceCheck(name: name, stream: .health, outcome: .failed, detail: "cannot open: \(message)")
            }
        }
    }
}
