import AgentCore
import Foundation
import Upload

/// Onboarding's step 1 on a Virtues box: the 6-digit code `virtues pair` shows, the
/// device's iroh identity (kept from an earlier pairing, else made now), the box's answer
/// kept in `[box]`, then one request over iroh to prove it (docs/install.md, "Pairing with
/// a Virtues box"). A refused code, too many tries and a box not up yet each end with
/// their own message and nothing written.
struct BoxPairingStep {
    let request: OnboardRequest
    let prompter: any Prompter
    let console: Console
    let printer: CheckPrinter
    let identity: ServerIdentity?

    func run(server start: ServerConfig, existing: BoxConfig) throws -> (ServerConfig, BoxConfig) {
        if request.token != nil || request.tokenFile != nil {
            throw OnboardFailure("this server is \(name), which has no device tokens: pair with the 6-digit code 'virtues pair' shows on the box: ariata-agent onboard --endpoint \(start.endpoint) --code CODE",
                                 exitCode: OnboardFailure.usage)
        }
        var server = start
        let key: DeviceKey
        do {
            if !existing.key.isEmpty, let kept = try? DeviceKey(seedHex: existing.key) {
                key = kept
            } else {
                key = try DeviceKey.generate()
            }
        } catch {
            throw OnboardFailure("cannot make this device's iroh identity: \(error)", exitCode: OnboardFailure.cannotWrite)
        }
        let label = request.deviceName ?? (server.deviceName.isEmpty ? HostName.current() : server.deviceName)
        var code = request.pairingCode
        while true {
            if code == nil {
                guard prompter.isInteractive else {
                    throw OnboardFailure("--code is required: \(name) pairs devices with the 6-digit code 'virtues pair' (or Add device in its web UI) shows",
                                         exitCode: OnboardFailure.usage)
                }
                code = try prompter.ask("  Pairing code (6 digits: run 'virtues pair' on the box, or Add device in its web UI)", default: nil)
            }
            let typed = code ?? ""
            if let problem = BoxPairingClient.problem(code: typed) {
                guard prompter.isInteractive else { throw OnboardFailure("--code: \(problem)", exitCode: OnboardFailure.usage) }
                console.line("  \(problem)")
                code = nil
                continue
            }
            console.line("  pairing with \(server.url(path: BoxPairingClient.path)) as \"\(label)\" (this device's iroh id \(key.endpointID.prefix(16))…) ...")
            switch BoxPairingClient(server: server, timeout: request.timeout).consume(code: typed, key: key, label: label) {
            case .paired(let paired):
                var box = existing
                box.nodeID = paired.boxNodeID
                box.relayURL = paired.relayURL
                box.directAddresses = paired.directAddresses
                box.appletID = paired.appletID
                box.deviceID = paired.deviceID
                box.pairedAt = RFC3339.string(from: Date())
                box.key = key.seed
                box.keyFile = nil
                server.token = Secret("")
                server.tokenFile = nil
                console.write(printer.render(DeviceCheck(name: "pairing", outcome: .ok,
                                                         detail: "paired with \(name) as device \(paired.deviceID); ingest applet \(paired.appletID); reached \(BoxVerifier.describeReach(box))")))
                verify(server, box)
                return (server, box)
            case .refused(let message):
                guard prompter.isInteractive else {
                    throw OnboardFailure("\(message): nothing was written; run 'virtues pair' on the box for a new code", exitCode: OnboardFailure.notVerified)
                }
                console.line("  \(message); run 'virtues pair' on the box for a new code")
                code = nil
            case .tooManyTries(let wait):
                let after = wait.map { " for \(Self.minutes($0)) (until \(Self.clock(Date().addingTimeInterval(TimeInterval($0)))))" } ?? " for a while"
                throw OnboardFailure("the box refuses pairing codes from this address\(after): too many tries (10 in 30 minutes): nothing was written; wait, then pair with a new code",
                                     exitCode: OnboardFailure.notVerified)
            case .boxNotReady(let message):
                throw OnboardFailure("\(message): nothing was written; the box is still starting: pair again in a minute (run 'virtues pair' for a new code if this one is used up)",
                                     exitCode: OnboardFailure.notVerified)
            case .failed(let message, let hint):
                throw OnboardFailure("\(message): nothing was written; \(hint)", exitCode: OnboardFailure.notVerified)
            }
        }
    }

    /// One request over iroh. A box that cannot be reached yet is no reason to lose the
    /// pairing (the code is used up): it is written, and the daemon keeps trying.
    private func verify(_ server: ServerConfig, _ box: BoxConfig) {
        console.line("  checking the box over iroh ...")
        let result = BoxVerifier(server: server, box: box, timeout: request.timeout).verify()
        console.write(printer.render(result.check))
        if result.check.outcome != .ok {
            console.line("  the pairing is kept (the code is used up); the agent sends nothing until the box answers, and loses nothing meanwhile; 'ariata-agent doctor' checks again")
        }
    }

    private var name: String { identity?.name ?? "a Virtues box" }

    static func minutes(_ seconds: Int) -> String {
        seconds < 120 ? "\(seconds) s" : "\((seconds + 59) / 60) minutes"
    }

    static func clock(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm"
        return formatter.string(from: date)
    }
}
