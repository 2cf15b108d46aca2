import AgentCore

/// `kind = "serial"`: a device that sends samples line by line over a serial port
/// (`SerialSource`). It counts nothing beyond the common counters.
public enum SerialSourceKind: HealthSourceKind {
    public static func make(_ settings: SerialSourceSettings, context: HealthSourceContext) -> any HealthSource {
        SerialSource(config: settings, serverMetrics: context.health.serverMetrics, queue: context.queue,
                     clock: context.clock, clockTrust: context.clockTrust, logger: context.logger)
    }

    /// The port must open the way the source opens it (`SerialPort`: raw mode at the
    /// configured baud), so the check cannot pass where the stream would fail.
    public static func check(_ settings: SerialSourceSettings, context: HealthCheckContext) -> DeviceCheck {
        let name = "health serial \(settings.path)"
        switch SerialPort.open(settings.path, baud: settings.baud) {
        case .success(let port):
            port.close()
            return DeviceCheck(name: name, stream: .health, outcome: .ok, detail: "opens at \(settings.baud) baud")
        case .failure(.permissionDenied):
            return DeviceCheck(name: name, stream: .health, outcome: .failed,
                               detail: "\(AgentErrorCode.permissionDenied.rawValue) permission denied",
                               fix: "sudo usermod -aG dialout \(context.serviceUser), then restart the service")
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

    /// Serial devices belong to `dialout`.
    public static var serviceUserGroup: String? { "dialout" }
}
