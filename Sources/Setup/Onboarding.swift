import AgentCore
import Foundation
import Logging

/// `ariata-agent onboard`, the steps of the iOS app's onboarding for a Linux box:
/// (1) endpoint and token, verified against the server before going on; (2) the device
/// checks, with the offer to disable a stream whose check fails; (3) the config file,
/// 0600 and owned by the service user, with a stable device id; (4) the health backfill;
/// (5) the service. Nothing is written before the server is verified.
public final class Onboarding {
    private var request: OnboardRequest
    private let prompter: any Prompter
    private let console: Console
    private var checks: DeviceChecks
    private let logger: Logger
    private let printer: CheckPrinter
    /// The device id was made by this run (the file had none): it is kept only if onboarding writes the file.
    private var deviceIDIsNew = false
    /// Which server this is, from its `GET /health` (nil: it did not say).
    private var identity: ServerIdentity?

    public init(request: OnboardRequest, prompter: any Prompter, console: Console = Console(),
                checks: DeviceChecks? = nil, printer: CheckPrinter = CheckPrinter(), logger: Logger) {
        self.request = request
        self.prompter = prompter
        self.console = console
        self.checks = checks ?? DeviceChecks(serviceUser: request.serviceUser)
        self.printer = printer
        self.logger = logger
    }

    /// Runs every step; throws `OnboardFailure` (with its exit status) when it stops early.
    public func run() throws {
        console.line("Setting up ariata-agent \(AgentVersion.string) on this device.")
        let mode = try ServiceModeStep(request: request, prompter: prompter, console: console).decide()
        let userPaths = UserServicePaths()
        if mode == .user {
            request = ServiceModeStep.userRequest(request, paths: userPaths)
            checks.serviceUser = request.serviceUser
        }
        var config = try loadExisting()
        if mode == .user { ServiceModeStep.userConfig(&config, paths: userPaths) }
        let path = request.configPath
        let existed = FileManager.default.fileExists(atPath: path)
        console.line("  the agent runs as the \(mode == .user ? "user service of \(request.serviceUser)" : "system service (user \(request.serviceUser))"); configuration: \(path)\(existed ? ", updating it" : "")")
        if !prompter.isInteractive { console.line("Non-interactive (--yes): every question takes its default.") }

        console.line("")
        console.line("1/5 Server")
        // A stable id: kept across onboardings, so the server sees one device.
        if config.server.deviceID.isEmpty {
            config.server.deviceID = UUID().uuidString.lowercased()
            deviceIDIsNew = true
        }
        config.server = try verifiedServer(config.server)

        console.line("")
        console.line("2/5 Device checks")
        try MicrophoneStep(requested: request.microphoneDevice, prompter: prompter, console: console, printer: printer)
            .run(&config.microphone)
        ChunkLengthStep(identity: identity, console: console).run(&config.microphone)
        try checkDevices(&config)

        console.line("")
        console.line("3/5 Configuration")
        try write(&config)

        console.line("")
        console.line("4/5 Health backfill")
        try BackfillStep(config: config, serviceUser: request.serviceUser, prompter: prompter, console: console, logger: logger).run()

        console.line("")
        console.line("5/5 Service")
        try ServiceStep(configPath: path, prompter: prompter, console: console, mode: mode).run()

        ServerSwitchesStep(server: config.server, timeout: request.timeout, console: console, printer: printer).run()

        console.line("")
        console.line("Done. See how it is doing with: ariata-agent status\(path == AgentConfig.defaultPath ? "" : " --config \(path)")")
    }

    // MARK: Steps

    /// The existing config, read without the environment overrides (ARIATA_TOKEN must not
    /// end up in the file), or the defaults.
    private func loadExisting() throws -> AgentConfig {
        do {
            return try AgentConfig.load(path: request.configPath, missingOK: true, environment: [:])
        } catch {
            throw OnboardFailure("\(error)\nonboard does not overwrite a file it cannot read: fix it, or move it away and run onboard again",
                                 exitCode: OnboardFailure.badConfig)
        }
    }

    /// Step 1: asks (or takes from the flags) the endpoint and token until the server
    /// verifies them. Non-interactive, the first failure ends onboarding.
    private func verifiedServer(_ existing: ServerConfig) throws -> ServerConfig {
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
        if !askEndpoint && ServerVerifier.urlProblem(server.endpoint) == nil { identify(server) }
        while true {
            if askEndpoint {
                server.endpoint = try askForEndpoint(default: server.endpoint)
                identify(server)
            }
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
            if let pairing = code {
                switch pair(.code(pairing), server: server) {
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
            switch pair(.sourceID(sourceID), server: server) {
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

    private enum PairingStep {
        case paired(Secret)
        case refused(String)
        case linksByID(String)
        case failed(String)
    }

    private enum PairingFlow {
        /// The short code of the Ariata web UI.
        case code(String)
        /// The pending source of a Virtues QR code.
        case sourceID(String)
    }

    /// Asks the server for the device token; says what the server lets this device push,
    /// and warns about the agent's streams it does not list.
    private func pair(_ flow: PairingFlow, server: ServerConfig) -> PairingStep {
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

    /// The daemon runs elsewhere (systemd starts it in /): a relative path given here
    /// is saved absolute, and one that cannot be read is refused before anything else.
    static func readableAbsolutePath(_ path: String, option: String) throws -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        guard access(absolute, R_OK) == 0 else {
            throw OnboardFailure("\(option) \(path): cannot read it (\(String(cString: strerror(errno))))", exitCode: OnboardFailure.usage)
        }
        return (absolute as NSString).standardizingPath
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

    /// Step 2: the device checks for the enabled streams; a stream whose check failed
    /// may be disabled now (the default answer).
    private func checkDevices(_ config: inout AgentConfig) throws {
        let results = checks.run(config)
        console.write(printer.render(results))
        let failing = Set(results.filter { $0.outcome == .failed }.compactMap(\.stream))
        for stream in StreamName.allCases where failing.contains(stream) && config.isEnabled(stream) {
            // A device that is not there yet (gpsd not started, a USB microphone plugged in
            // later) is no reason to stop collecting: the stream retries by itself.
            let disable = try prompter.confirm("  The \(stream.rawValue) check failed. Disable \(stream.rawValue) for now?",
                                               default: request.disableFailing)
            if disable {
                config.setEnabled(stream, false)
                console.line("  disabled \(stream.rawValue)\(prompter.isInteractive ? "" : " (--yes)"); after the fix, set [\(stream.rawValue)] enabled = true and restart the agent")
            } else {
                console.line("  \(stream.rawValue) stays enabled: it retries by itself and reports itself unhealthy in 'ariata-agent status' until fixed\(prompter.isInteractive ? "" : " (--disable-failing switches such streams off)")")
            }
        }
        if results.contains(where: { $0.outcome == .failed && $0.stream == nil }) {
            console.line("  a check of the machine failed: the agent runs, but fix it soon (see the fix above)")
        }
    }

    /// Step 3: the device name, then the file.
    private func write(_ config: inout AgentConfig) throws {
        let fallback = config.server.deviceName.isEmpty ? HostName.current() : config.server.deviceName
        if let name = request.deviceName {
            config.server.deviceName = name
        } else {
            config.server.deviceName = try prompter.ask("  Device name (how the server lists it)", default: fallback)
        }
        if config.server.deviceName.isEmpty { config.server.deviceName = fallback }
        config.file = request.configPath
        do {
            try ConfigWriter.write(config, to: request.configPath, owner: request.serviceUser)
        } catch {
            throw OnboardFailure("\(error)", exitCode: OnboardFailure.cannotWrite)
        }
        let directory = (request.configPath as NSString).deletingLastPathComponent
        if let note = ServiceUserOwnership.letEnter(directory.isEmpty ? "." : directory, user: request.serviceUser) {
            console.line("  \(note)")
        }
        let owner = ServiceUserOwnership.owner(for: request.serviceUser)
        console.line("  wrote \(request.configPath) (mode 0600, owner \(owner)): device \"\(config.server.deviceName)\", id \(config.server.deviceID)")
        let enabled = StreamName.allCases.filter { config.isEnabled($0) }.map(\.rawValue)
        console.line("  streams enabled: \(enabled.isEmpty ? "none" : enabled.joined(separator: ", "))")
    }

}
