import AgentCore
import Foundation

/// `onboard --link` (Virtues, docs/install.md): prints the device id as text and as a QR
/// code, then asks the server every two seconds (`DeviceLinkCheck`) until it has linked
/// the id, the time limit passes or Ctrl-C. Throws `OnboardFailure` when it ends without
/// the link; nothing is written either way (onboarding writes the file later).
struct LinkStep {
    let server: ServerConfig
    /// Seconds to wait for the link.
    let limit: TimeInterval
    /// `--timeout`: for each look at the server (at most 10 s).
    let requestTimeout: Int?
    /// The file had no device id: a new run shows another one.
    let deviceIDIsNew: Bool
    let console: Console
    let printer: CheckPrinter

    func run() throws {
        let id = server.deviceID
        // A short time-out per look: a server that hangs must not hold up Ctrl-C or the limit.
        let check = DeviceLinkCheck(server: server, timeout: min(requestTimeout ?? server.requestTimeout, 10))
        let interruption = Interruption()
        console.line("  checking \(check.url) with this device's id ...")
        switch check.check(isCancelled: { interruption.happened }) {
        case .linked:
            console.write(printer.render(DeviceCheck(name: "link", outcome: .ok, detail: "the server has already linked this device's id \(id)")))
            return
        case .stop(let message, let hint), .trouble(let message, let hint):
            if interruption.happened { throw Self.linkInterrupted }
            console.write(printer.render(DeviceCheck(name: "link", outcome: .failed, detail: message, fix: hint)))
            throw OnboardFailure("\(message): nothing was written", exitCode: OnboardFailure.notVerified)
        case .notYet:
            break
        }
        let spokenLimit = Self.spoken(seconds: limit)
        console.line("  Link this device in the server's web UI (its page for linking a device by id): enter")
        console.line("  this device id there, or scan the QR code below and paste what it reads.")
        console.line("")
        console.line("      \(id)")
        console.line("")
        if let code = QRCode(text: id) {
            for line in code.terminalLines(colours: printer.colour) { console.line("  " + line) }
            console.line("")
        }
        console.line("  waiting for the server to link it (up to \(spokenLimit); Ctrl-C stops) ...")
        let wait = DeviceLinkWait(limit: .milliseconds(Int64(limit * 1000)), interruption: interruption)
        let outcome = wait.run(check: { check.check(isCancelled: { interruption.happened }) }) { message, hint in
            console.write(printer.render(DeviceCheck(name: "link", outcome: .warning, detail: message, fix: "\(hint); still waiting")))
        }
        let again = "link the id in the web UI, then run 'ariata-agent onboard --link' again"
            + (deviceIDIsNew ? " (it shows a new id: this one is not kept)" : " (the id stays the same)")
        switch outcome {
        case .linked(let after):
            console.write(printer.render(DeviceCheck(name: "link", outcome: .ok,
                detail: "linked after \(after.components.seconds) s: the server knows this device's id, which is its token (kept in the configuration)")))
        case .timedOut(let trouble):
            let last = trouble.map { " (the last check: \($0))" } ?? ""
            console.write(printer.render(DeviceCheck(name: "link", outcome: .failed,
                detail: "the server had not linked \(id) after \(spokenLimit)\(last)", fix: again)))
            throw OnboardFailure("the server did not link this device within \(spokenLimit): nothing was written; \(again)",
                                 exitCode: OnboardFailure.notVerified)
        case .interrupted:
            throw Self.linkInterrupted
        case .stopped(let message, let hint):
            console.write(printer.render(DeviceCheck(name: "link", outcome: .failed, detail: message, fix: hint)))
            throw OnboardFailure("\(message): nothing was written", exitCode: OnboardFailure.notVerified)
        }
    }

    private static let linkInterrupted = OnboardFailure("stopped waiting for the link (Ctrl-C): nothing was written",
                                                        exitCode: OnboardFailure.interrupted)

    /// "10 min", "90 s".
    static func spoken(seconds: TimeInterval) -> String {
        let whole = Int(seconds.rounded())
        return whole >= 60 && whole % 60 == 0 ? "\(whole / 60) min" : "\(whole) s"
    }
}
