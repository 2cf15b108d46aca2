import AgentCore
import Foundation
import Upload

/// Onboarding's last look at the server's stream switches (`POST /api/devices/verify`,
/// an Ariata server's): a device just paired has no stream switched on until the person
/// turns streams on in the web UI, and captures nothing until then, which onboarding says
/// rather than leaving the person to wonder (docs/upload.md#the-servers-stream-switches).
/// What the daemon does with the switches does not depend on this: it asks by itself.
struct ServerSwitchesStep {
    let server: ServerConfig
    let timeout: Int?
    let console: Console
    let printer: CheckPrinter

    func run() {
        var server = server
        server.requestTimeout = min(timeout ?? server.requestTimeout, 10)
        server.connectTimeout = min(server.connectTimeout, server.requestTimeout)
        switch StreamSwitchClient(server: server).fetch(now: Date()) {
        case .switches(let switches) where !switches.isConfigurationComplete:
            console.write(printer.render(DeviceCheck(name: "server switches", outcome: .warning,
                detail: "the server has no stream switched on for this device yet: nothing is captured until then",
                fix: "turn them on in its web UI; capture starts within a minute of that")))
        case .switches(let switches):
            let off = switches.switchedOffStreams.map(\.rawValue).sorted()
            let detail = off.isEmpty ? "every stream is switched on at the server"
                : "switched off in the server's web UI, not captured until switched on there: \(off.joined(separator: ", "))"
            console.write(printer.render(DeviceCheck(name: "server switches", outcome: .ok, detail: detail)))
        case .noSwitches:
            break // Virtues: its switches live in its web UI only; the configuration decides.
        case .unauthorized(let reason), .failed(let reason, _):
            console.write(printer.render(DeviceCheck(name: "server switches", outcome: .warning, detail: "could not read them: \(reason)",
                                                     fix: "the daemon asks by itself when it starts and every hour")))
        }
    }
}
