import AgentCore
import Foundation
import Upload

/// Onboarding's step 1: the endpoint, which server it is (`ServerIdentityStep`), and the
/// device token in the way that server offers it (a pairing code, linking by the device's
/// id, a QR code's source, or a token typed in), verified with one empty batch before
/// anything is written. Non-interactive, the first failure ends onboarding.
final class ServerStep {
    private let request: OnboardRequest
    private let prompter: any Prompter
    private let console: Console
    private let printer: CheckPrinter
    private let pairing: PairingStep
    /// The device id was made by this run (the file had none).
    private let deviceIDIsNew: Bool
    /// Which server this is, from its `GET /health` (nil: it did not say).
    private(set) var identity: ServerIdentity?
    /// A Virtues box's pairing, when the server is one (`BoxPairingStep`); nil otherwise.
    private(set) var box: BoxConfig?

    init(request: OnboardRequest, prompter: any Prompter, console: Console, printer: CheckPrinter, deviceIDIsNew: Bool) {
        self.request = request
        self.prompter = prompter
        self.console = console
        self.printer = printer
        self.deviceIDIsNew = deviceIDIsNew
        pairing = PairingStep(request: request, console: console, printer: printer)
    }

    /// Step 1: asks (or takes from the flags) the endpoint and token until the server
    /// verifies them. Non-interactive, the first failure ends onboarding.
    func run(_ existing: ServerConfig, box existingBox: BoxConfig = BoxConfig()) throws -> ServerConfig {
        var server = existing
        if let endpoint = request.endpoint { server.endpoint = endpoint }
        if let path = request.ingestPath { server.ingestPath = path }
        if let ca = request.caFile {
            server.caFile = try ca.isEmpty ? nil : Self.readableAbsolutePath(ca, option: "--ca-file")
        }
        if let token = request.token {
            server.token = token
            server.tokenFile = nil
        }
        if request.link || request.sourceID != nil { return try serverByDeviceID(server, endpointAsked: false) }
        // A Virtues box pairs by its own code and has no tokens: it is told apart first.
        if request.endpoint != nil || !prompter.isInteractive, ServerVerifier.urlProblem(server.endpoint) == nil {
            identify(server)
            if identity?.generation == .box { return try pairWithBox(server, existing: existingBox) }
        }
        if !prompter.isInteractive {
            if server.endpoint.isEmpty {
                throw OnboardFailure("--endpoint is required: \(request.configPath) has no endpoint yet", exitCode: OnboardFailure.usage)
            }
            if server.token.isEmpty && request.pairingCode == nil {
                throw OnboardFailure("--code, --link, --source-id, --token or --token-file is required: \(request.configPath) has no token yet",
                                     exitCode: OnboardFailure.usage)
            }
        }
        var askEndpoint = prompter.isInteractive && request.endpoint == nil
        var code = request.pairingCode
        // On a terminal without a code or token given: the server's pairing code first
        // (what its web UI shows), a token typed in as the alternative.
        // A device that already has a token is asked for it (Enter keeps it); `--code` pairs again.
        var askCode = prompter.isInteractive && request.token == nil && code == nil && server.token.isEmpty
        var askToken = prompter.isInteractive && request.token == nil && code == nil && !askCode
        var askPath = false
        // What Enter means at the token question: keep the file's token, or the one just
        // given (when something else failed); a refused token is not offered again.
        var keepLabel = "Enter keeps the current one"
        if !askEndpoint && identity == nil && ServerVerifier.urlProblem(server.endpoint) == nil { identify(server) }
        while true {
            if askEndpoint {
                server.endpoint = try askForEndpoint(default: server.endpoint)
                identify(server)
            }
            if identity?.generation == .box { return try pairWithBox(server, existing: existingBox) }
            // A Virtues server links devices by their id: offered instead of a code it refuses.
            if askCode, identity?.linksByDeviceID == true,
               try prompter.confirm("  This server links devices by their id. Link this device now (its id and a QR code are shown)?", default: true) {
                return try serverByDeviceID(server, endpointAsked: true)
            }
            if askPath {
                server.ingestPath = try prompter.ask("  Ingest path (below the server URL)", default: server.ingestPath)
            }
            if askCode {
                let answer = try prompter.ask("  Pairing code from the server's web UI (Enter to type a device token instead)", default: nil)
                    .trimmingCharacters(in: .whitespaces)
                code = answer.isEmpty ? nil : answer
                askToken = code == nil
                askCode = false
            }
            if let typed = code {
                switch pairing.run(.code(typed), server: server) {
                case .paired(let token):
                    server.token = token
                    server.tokenFile = nil
                    code = nil
                case .refused(let message):
                    guard prompter.isInteractive else {
                        throw OnboardFailure("\(message): nothing was written; ask the server's web UI for a new code", exitCode: OnboardFailure.notVerified)
                    }
                    // The server answered: only the code was wrong.
                    askEndpoint = false
                    askPath = false
                    askCode = true
                    continue
                case .linksByID(let message):
                    throw OnboardFailure("\(message): nothing was written; this server links devices by their id: run 'ariata-agent onboard --endpoint \(server.endpoint) --link'",
                                         exitCode: OnboardFailure.notVerified)
                case .failed(let message):
                    guard prompter.isInteractive else {
                        throw OnboardFailure("\(message): nothing was written", exitCode: OnboardFailure.notVerified)
                    }
                    askEndpoint = true
                    askCode = true
                    continue
                }
            }
            if askToken {
                let hadToken = !server.token.isEmpty
                var answer = ""
                while answer.isEmpty {
                    answer = try prompter.askSecret("  Device token (from the server; not shown)",
                                                    defaultLabel: hadToken ? keepLabel : nil)
                    if answer.isEmpty && hadToken { break }
                    if answer.isEmpty { console.line("  a token is needed: copy it from your Ariata server's device page") }
                }
                if !answer.isEmpty {
                    server.token = Secret(answer)
                    server.tokenFile = nil
                }
            }
            let result = checkServer(server)
            if result.isVerified { return server }
            guard prompter.isInteractive else {
                throw OnboardFailure("the server could not be verified: nothing was written", exitCode: OnboardFailure.notVerified)
            }
            // Ask again: the token alone when only the token was refused.
            askToken = true
            askCode = false
            askEndpoint = !result.blamesToken
            askPath = result.blamesPath
            if result.blamesToken {
                server.token = Secret("")
                server.tokenFile = nil
            } else {
                keepLabel = "Enter keeps the one just given"
            }
        }
    }

    /// A Virtues box: its code, the device's iroh identity, the reach ticket kept.
    private func pairWithBox(_ server: ServerConfig, existing: BoxConfig) throws -> ServerConfig {
        let (paired, box) = try BoxPairingStep(request: request, prompter: prompter, console: console, printer: printer,
                                               identity: identity).run(server: server, existing: existing)
        self.box = box
        return paired
    }

    /// The endpoint and token verified with one empty batch (`ServerVerifier`), the result printed.
    private func checkServer(_ server: ServerConfig) -> ServerVerification {
        if ServerVerifier.urlProblem(server.endpoint) == nil {
            console.line("  checking \(server.ingestURL) ...")
        }
        let result = ServerVerifier(server: server, timeout: request.timeout).verify()
        console.write(printer.render(result.asCheck))
        if result.outcome == .everyDeviceRefused, let note = ServerIdentityStep.loginWallNote(identity) {
            console.line("  \(note)")
        }
        return result
    }

    /// Which server this is, named in the output and kept for the steps that depend on it.
    private func identify(_ server: ServerConfig) {
        identity = ServerIdentityStep(timeout: request.timeout, console: console, printer: printer).run(server)
    }

    /// `--link` and `--source-id` (Virtues, docs/install.md): the device's id becomes its
    /// token, by the person linking it in the web UI or by completing the QR code's
    /// pending source. Nothing to ask again: a failure ends onboarding.
    private func serverByDeviceID(_ start: ServerConfig, endpointAsked: Bool) throws -> ServerConfig {
        var server = start
        if endpointAsked {
            // Asked and identified already.
        } else if prompter.isInteractive && request.endpoint == nil {
            server.endpoint = try askForEndpoint(default: server.endpoint)
            identify(server)
        } else if server.endpoint.isEmpty {
            throw OnboardFailure("--endpoint is required: \(request.configPath) has no endpoint yet", exitCode: OnboardFailure.usage)
        } else if let problem = ServerVerifier.urlProblem(server.endpoint) {
            throw OnboardFailure("--endpoint: \(problem): give the server's base URL, http:// or https://", exitCode: OnboardFailure.usage)
        } else {
            identify(server)
        }
        try ServerIdentityStep.refuseLinking(identity, endpoint: server.endpoint)
        if let sourceID = request.sourceID {
            switch pairing.run(.sourceID(sourceID), server: server) {
            case .paired(let token):
                server.token = token
            case .refused(let message):
                throw OnboardFailure("\(message): nothing was written; ask the server's web UI for a new QR code", exitCode: OnboardFailure.notVerified)
            case .linksByID(let message), .failed(let message):
                throw OnboardFailure("\(message): nothing was written", exitCode: OnboardFailure.notVerified)
            }
        } else {
            do {
                try LinkStep(server: server, limit: request.linkTimeout, requestTimeout: request.timeout,
                             deviceIDIsNew: deviceIDIsNew, console: console, printer: printer).run()
            } catch let failure as OnboardFailure {
                if "\(failure)".contains(ServerIdentity.everyDeviceRefused), let note = ServerIdentityStep.loginWallNote(identity) {
                    console.line("  \(note)")
                }
                throw failure
            }
            server.token = Secret(server.deviceID)
        }
        server.tokenFile = nil
        guard checkServer(server).isVerified else {
            throw OnboardFailure("the server could not be verified: nothing was written", exitCode: OnboardFailure.notVerified)
        }
        return server
    }



    private func askForEndpoint(default current: String) throws -> String {
        while true {
            let answer = try prompter.ask("  Server URL (e.g. https://ariata.example.org)", default: current)
            if let problem = ServerVerifier.urlProblem(answer) {
                console.line("  \(problem): give the server's base URL, http:// or https://")
                continue
            }
            return answer
        }
    }

    /// The daemon runs elsewhere (systemd starts it in /): a relative path given here
    /// is saved absolute, and one that cannot be read is refused before anything else.
    static func readableAbsolutePath(_ path: String, option: String) throws -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        guard access(absolute, R_OK) == 0 else {
            throw OnboardFailure("\(option) \(path): cannot read it (\(String(cString: strerror(errno))))", exitCode: OnboardFailure.usage)
        }
        return (absolute as NSString).standardizingPath
    }
}
