import AgentCore
import Foundation
import Upload

/// Onboarding's pairing: asks the server for the device token, with an Ariata web UI's
/// short code or a Virtues QR code's pending source; says what the server lets this device
/// push, and warns about the agent's streams it does not list (docs/install.md, "Pairing
/// and linking").
struct PairingStep {
    let request: OnboardRequest
    let console: Console
    let printer: CheckPrinter

    enum Outcome {
        case paired(Secret)
        case refused(String)
        case linksByID(String)
        case failed(String)
    }

    enum Flow {
        /// The short code of the Ariata web UI.
        case code(String)
        /// The pending source of a Virtues QR code.
        case sourceID(String)
    }

    /// Asks the server for the device token; says what the server lets this device push,
    /// and warns about the agent's streams it does not list.
    func run(_ flow: Flow, server: ServerConfig) -> Outcome {
        let name = request.deviceName ?? (server.deviceName.isEmpty ? HostName.current() : server.deviceName)
        let device = DeviceInfo.current(deviceID: server.deviceID, deviceName: name)
        var base = server.endpoint
        while base.hasSuffix("/") { base.removeLast() }
        let client = PairingClient(server: server, timeout: request.timeout)
        let path: String
        let outcome: PairingClient.Outcome
        let newOne: String
        switch flow {
        case .code(let code):
            (path, newOne) = (PairingClient.path, "codes are short-lived and work once: ask the server's web UI for a new one")
            console.line("  pairing with \(base)\(path) as \"\(device.deviceName)\" (\(device.deviceModel), \(device.osVersion)) ...")
            outcome = client.pair(code: code, device: device)
        case .sourceID(let sourceID):
            (path, newOne) = (PairingClient.path(sourceID: sourceID), "a QR code's pairing works once and for 10 minutes: ask the server's web UI for a new one")
            console.line("  pairing with \(base)\(path) as \"\(device.deviceName)\" (\(device.deviceModel), \(device.osVersion)) ...")
            outcome = client.complete(sourceID: sourceID, device: device)
        }
        switch outcome {
        case .paired(let paired):
            console.write(printer.render(DeviceCheck(name: "pairing", outcome: .ok,
                                                     detail: "paired: the server gave this device its token (kept in the configuration, never shown)")))
            let missing = paired.missingStreams
            if !missing.isEmpty {
                let listed = paired.availableStreams.isEmpty ? "none" : paired.availableStreams.joined(separator: ", ")
                console.write(printer.render(DeviceCheck(name: "streams", outcome: .warning,
                    detail: "the server does not list \(missing.joined(separator: ", ")) among this device's streams (it lists \(listed))",
                    fix: "their records stay queued and the server refuses them (E007) until it has those streams: check the server version")))
            }
            return .paired(paired.token)
        case .refused(let message):
            console.write(printer.render(DeviceCheck(name: "pairing", outcome: .failed, detail: message, fix: newOne)))
            return .refused(message)
        case .linksByID(let message):
            console.write(printer.render(DeviceCheck(name: "pairing", outcome: .failed, detail: message,
                fix: "this server (Virtues) links devices by their id instead: ariata-agent onboard --endpoint \(server.endpoint) --link")))
            return .linksByID(message)
        case .failed(let message, let hint):
            console.write(printer.render(DeviceCheck(name: "pairing", outcome: .failed, detail: message, fix: hint)))
            return .failed(message)
        }
    }
}
