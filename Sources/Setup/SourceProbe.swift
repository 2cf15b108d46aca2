import AgentCore
import Foundation

/// Can a health source be read? A file must be readable (or its directory exist, for a
/// file a logger will create); a serial port must open.
struct SourceProbe {
    let source: HealthSourceConfig
    let serviceUser: String

    func check() -> DeviceCheck {
        let name = "health \(source.kind.rawValue) \(source.path)"
        switch source.kind {
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
            let fd = open(source.path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
            if fd >= 0 {
                close(fd)
                return DeviceCheck(name: name, stream: .health, outcome: .ok, detail: "opens")
            }
            let error = errno
            if error == EACCES || error == EPERM {
                return DeviceCheck(name: name, stream: .health, outcome: .failed,
                                   detail: "\(AgentErrorCode.permissionDenied.rawValue) permission denied",
                                   fix: "sudo usermod -aG dialout \(serviceUser), then restart the service")
            }
            return DeviceCheck(name: name, stream: .health, outcome: error == ENOENT ? .warning : .failed,
                               detail: "cannot open: \(String(cString: strerror(error)))"
                                   + (error == ENOENT ? " (unplugged? it is reopened when it appears)" : ""),
                               fix: error == ENOENT ? "plug the device in, or correct [[health.source]] path" : nil)
        }
    }
}
