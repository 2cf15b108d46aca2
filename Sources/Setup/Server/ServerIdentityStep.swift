import AgentCore
import Foundation
import Upload

/// Onboarding's first question to a server: which generation and build it is
/// (`GET {endpoint}/health`, public on both), named in the output, so that onboarding
/// offers only what that generation supports: a pairing code on Ariata, linking by the
/// device's id on Virtues (docs/install.md, "Which server"). A server that does not say
/// is no reason to stop: onboarding goes on as before.
struct ServerIdentityStep {
    let timeout: Int?
    let console: Console
    let printer: CheckPrinter

    func run(_ server: ServerConfig) -> ServerIdentity? {
        console.line("  asking \(server.url(path: ServerIdentityClient.path)) which server this is ...")
        let (check, identity) = Self.check(server, timeout: timeout)
        console.write(printer.render(check))
        return identity
    }

    /// Asks the server which it is (at most 10 s): the check onboarding and `doctor` print,
    /// and the identity when it said.
    static func check(_ server: ServerConfig, timeout: Int?) -> (DeviceCheck, ServerIdentity?) {
        switch ServerIdentityClient(server: server, timeout: min(timeout ?? server.requestTimeout, 10)).fetch(now: Date()) {
        case .identified(let identity):
            return (DeviceCheck(name: "server", outcome: .ok, detail: describe(identity)), identity)
        case .failed(let reason):
            return (DeviceCheck(name: "server", outcome: .warning, detail: "it does not say which server it is: \(reason)",
                                fix: "if what follows fails, check that the endpoint is the server's base URL"), nil)
        }
    }

    /// The server's name and what this generation offers a device.
    static func describe(_ identity: ServerIdentity) -> String {
        switch identity.generation {
        case .ariata: return "\(identity.name): pairs devices with the code its web UI shows (--code)"
        case .virtues: return "\(identity.name): links devices by their id (--link shows it with a QR code; --source-id completes a QR code's pairing)"
        case .box: return "\(identity.name): pairs devices with the 6-digit code 'virtues pair' shows (--code), then takes their data over iroh"
        case nil: return "\(identity.name): neither Ariata nor Virtues by its answer; pairing by code or a token typed in"
        }
    }

    /// `--link` and `--source-id` against an Ariata server, which has no linking route:
    /// refused at once with the flow it has, instead of waiting out the time limit.
    static func refuseLinking(_ identity: ServerIdentity?, endpoint: String) throws {
        if let identity, identity.generation == .box {
            throw OnboardFailure("this server is \(identity.name), which does not link devices by their id (--link and --source-id are the older Virtues'): "
                                 + "nothing was written; pair with the 6-digit code 'virtues pair' shows on the box: ariata-agent onboard --endpoint \(endpoint) --code CODE",
                                 exitCode: OnboardFailure.usage)
        }
        guard let identity, identity.generation == .ariata else { return }
        throw OnboardFailure("this server is \(identity.name), which does not link devices by their id (--link and --source-id are Virtues'): "
                             + "nothing was written; pair with the code its web UI shows: ariata-agent onboard --endpoint \(endpoint) --code CODE",
                             exitCode: OnboardFailure.usage)
    }

    /// What a `401 {"error":"Unauthorized"}` is on this server: the login wall's known
    /// problem, named with the build it came from.
    static func loginWallNote(_ identity: ServerIdentity?) -> String? {
        guard let identity, identity.hasLoginWall else { return nil }
        return "this is the known problem of \(identity.name), a build of Virtues' 2026-02 release or later, whose web login stands in front of the device routes: update the server (or ask its administrator)"
    }
}
