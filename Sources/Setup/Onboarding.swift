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
    /// Which server this is, from its `GET /health` (nil: it did not say): step 1 finds it.
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
        checks.serviceMode = mode
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
        let serverStep = ServerStep(request: request, prompter: prompter, console: console, printer: printer,
                                    deviceIDIsNew: deviceIDIsNew)
        config.server = try serverStep.run(config.server, box: config.box)
        // Paired with a box, or with an older server by its token: never both.
        config.box = serverStep.box ?? BoxConfig()
        identity = serverStep.identity

        console.line("")
        console.line("2/5 Device checks")
        try MicrophoneStep(requested: request.microphoneDevice, prompter: prompter, console: console, printer: printer)
            .run(&config.microphone)
        ChunkLengthStep(identity: identity, console: console).run(&config.microphone)
        if mode != .user { GeoClueAgentStep(whitelist: checks.geoClueWhitelist, console: console).run(config.location) }
        try checkDevices(&config)
        // After the checks of the configured sources, so the sensor set up now is checked once.
        try BLESensorStep(requested: request.bleSensor, scanRequested: request.bleScan, scanSeconds: request.bleScanSeconds,
                          prompter: prompter, console: console, printer: printer)
            .run(&config.health)

        console.line("")
        console.line("3/5 Configuration")
        try write(&config)

        console.line("")
        console.line("4/5 Health backfill")
        try BackfillStep(config: config, serviceUser: request.serviceUser, prompter: prompter, console: console, logger: logger).run()

        console.line("")
        console.line("5/5 Service")
        try ServiceStep(configPath: path, prompter: prompter, console: console, mode: mode).run()

        if config.box.isPaired {
            console.line("  \(identity?.name ?? "The Virtues box") has no stream switches: this device's configuration alone decides what it captures")
        } else {
            ServerSwitchesStep(server: config.server, timeout: request.timeout, console: console, printer: printer).run()
        }

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
