import AgentCore
import Foundation

/// Everything `ariata-agent run` needs, real, on one machine: the reference receiver, a
/// gpsd fed a synthetic drive, ALSA capture through the `file` plugin fed speech at
/// real-time pace through a FIFO (tools/demo/pcm-feeder.py), a health file, and a config
/// that points the agent at all of them. The agent runs as a child process.
public final class DaemonRig: @unchecked Sendable {
    // Touched from the test's thread only.
    public let directory: TemporaryDirectory
    public let receiver: ReceiverRig
    public let gps: GPSDRig
    public let configPath: String
    public let databasePath: String
    public let healthPath: String
    public let notifySocket: NotifySocket
    /// The agent's clock-synchronisation test hook (ARIATA_CLOCK_SYNC_FILE): this machine's
    /// kernel may well say "unsynchronised" (a container, a VM without NTP), which would
    /// hold every audio chunk; the rig says "synchronised" unless a test writes otherwise.
    public let clockSyncFile: String
    public private(set) var feeder: NMEAFeeder
    /// How long gpsd is fed the synthetic drive, at start and at `restartFeed`.
    private let driveSeconds: Int
    private let drivePeriod: TimeInterval
    private let pcmFeeder: ChildProcess
    /// The feeders of the devices `plugInDevice` added.
    private var pluggedFeeders: [ChildProcess] = []
    private let alsaConfig: String
    public private(set) var agent: ChildProcess?
    /// The receiver plays a Virtues box.
    public let isBox: Bool

    /// The ALSA device the rig feeds speech at real-time pace.
    public static let feedDevice = "daemon_mic"

    /// - Parameters:
    ///   - chunkSeconds: audio chunk length (short chunks keep tests short).
    ///   - extraConfig: TOML appended to the config.
    ///   - databasePath: where the queue lives (default: in the rig's directory).
    ///   - storageConfig: more `[storage]` keys (min_free_mb, max_queue_mb).
    ///   - locationEnabled: `[location] enabled` (gpsd and its feed run either way).
    ///   - locationInterval, healthCommitInterval: short for tests; a real device's
    ///     (10 s, 300 s) for benchmarks.
    ///   - microphoneConfig: more `[microphone]` keys (complexity).
    ///   - microphoneDevice: `[microphone] device`; the rig's FIFO-fed device is `feedDevice`.
    ///   - driveSeconds: how many epochs (seconds of driving) gpsd is fed.
    ///   - drivePeriod: wall seconds per epoch (1: as a receiver sends them; 0.5 drives
    ///     twice as fast, which the agent accepts while the fix times stay within its
    ///     5 minutes ahead of the clock).
    ///   - tls: the receiver serves HTTPS with this certificate, which the agent trusts as
    ///     its `ca_file` (the receiver's control API is then out of reach: see `ReceiverRig`).
    ///   - caFile: the agent's `ca_file` instead (a bundle that holds the certificate).
    ///   - gpsdRunning: false for a laptop without a receiver: the pty is there, gpsd is not.
    ///   - locationConfig: more `[location]` keys (source, accuracy_level).
    ///   - healthConfig: more `[health]` keys (hrv_window_seconds), before its sources.
    ///   - uploadConfig: more `[upload]` keys (metered_networks).
    public init(chunkSeconds: Int = 6, overlapSeconds: Int = 1, uploadInterval: Int = 5,
                checkInterval: Int = 2, extraConfig: String = "", databasePath: String? = nil,
                storageConfig: String = "", locationEnabled: Bool = true,
                locationInterval: Int = 2, healthCommitInterval: Int = 1, microphoneConfig: String = "",
                microphoneDevice: String = DaemonRig.feedDevice,
                driveSeconds: Int = 600, drivePeriod: TimeInterval = 1, tls: (certificate: String, key: String)? = nil,
                caFile: String? = nil, gpsdRunning: Bool = true, locationConfig: String = "",
                healthConfig: String = "", uploadConfig: String = "", box: Bool = false, boxArguments: [String] = []) throws {
        directory = try TemporaryDirectory("ariata-daemon")
        if box {
            // A Virtues box: pairing on plain HTTP, the rest over iroh (only inside a network
            // namespace with loopback alone: see `ReceiverRig.box`). `pairWithBox()` onboards.
            receiver = try ReceiverRig.box(logDirectory: directory.path, arguments: boxArguments)
        } else {
            receiver = try ReceiverRig(logDirectory: directory.path, token: "daemon-token", tls: tls)
            try receiver.start()
        }
        self.isBox = box
        gps = try GPSDRig(startGPSD: gpsdRunning)
        self.driveSeconds = driveSeconds
        self.drivePeriod = drivePeriod
        feeder = NMEAFeeder(rig: gps, epochs: NMEADrive.synthetic(epochs: driveSeconds, start: Date()), period: drivePeriod)
        feeder.start()

        let speech = try SpeechInput.make(seconds: 60, in: directory.path)
        let fifo = directory.file("mic.fifo")
        guard mkfifo(fifo, 0o600) == 0 else { throw RigFailure("mkfifo \(fifo) failed") }
        alsaConfig = directory.file("asound.conf")
        try """
            <\(ALSARig.systemConfig)>
            pcm.\(Self.feedDevice) {
                type file
                slave.pcm "null"
                file "/dev/null"
                infile "\(fifo)"
                format "raw"
            }

            """.write(toFile: alsaConfig, atomically: true, encoding: .utf8)
        pcmFeeder = try ChildProcess("python3", ["\(Repository.path("tools/demo/pcm-feeder.py"))", speech, fifo],
                                     name: "pcm-feeder", logDirectory: directory.path)

        healthPath = directory.file("health.jsonl")
        FileManager.default.createFile(atPath: healthPath, contents: nil)
        self.databasePath = databasePath ?? directory.file("agent.sqlite")
        notifySocket = try NotifySocket(path: directory.file("notify.sock"))
        clockSyncFile = directory.file("clock-sync")
        try "synchronised\n".write(toFile: clockSyncFile, atomically: true, encoding: .utf8)
        configPath = directory.file("agent.toml")
        try """
            [server]
            endpoint = "\(receiver.endpoint)"
            \(box ? "" : "token = \"daemon-token\"")
            device_id = "\(box ? "0f8fad5b-d9cb-469f-a165-70867728950e" : "daemon-test")"
            \((caFile ?? tls?.certificate).map { "ca_file = \"\($0)\"" } ?? "")
            [storage]
            database = "\(self.databasePath)"
            \(storageConfig)
            [upload]
            interval = \(uploadInterval)
            \(uploadConfig)
            [location]
            enabled = \(locationEnabled)
            gpsd_host = "127.0.0.1"
            gpsd_port = \(gps.port)
            interval = \(locationInterval)
            \(locationConfig)
            [microphone]
            device = "\(microphoneDevice)"
            chunk_seconds = \(chunkSeconds)
            overlap_seconds = \(overlapSeconds)
            \(microphoneConfig)
            [health]
            enabled = true
            commit_interval = \(healthCommitInterval)
            \(healthConfig)
            [[health.source]]
            kind = "file"
            path = "\(healthPath)"
            format = "jsonl"
            name = "test-watch"
            [daemon]
            check_interval = \(checkInterval)
            \(extraConfig)
            """.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    deinit {
        agent?.stop(grace: 10)
        feeder.stop()
        pcmFeeder.stop(grace: 1)
        for feeder in pluggedFeeders { feeder.stop(grace: 1) }
        receiver.stop()
    }

    /// The system unit and the user unit (a laptop's), in the repository.
    public static let systemUnit = "systemd/ariata-agent.service"
    public static let userUnit = "systemd/user/ariata-agent.service"

    /// The `Environment=` assignments of a unit (the system unit's by default): the rig
    /// runs the daemon in the environment the unit gives it.
    public static func unitEnvironment(unit: String = systemUnit) throws -> [String: String] {
        var environment: [String: String] = [:]
        for line in try UnitFile(contentsOf: Repository.path(unit)).values("Service", "Environment") {
            for assignment in line.split(separator: " ") {
                let parts = assignment.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { environment[String(parts[0])] = String(parts[1]) }
            }
        }
        return environment
    }

    /// Starts `ariata-agent run` with the unit's environment (`unit`: the system unit's, or
    /// `userUnit`) and the rig's ALSA config, notify socket and clock state file;
    /// `environment` adds to that (LD_PRELOAD for libfaketime, a `DBusRig`'s bus, say), and
    /// `launcher` is a program and arguments that exec the agent (its path and arguments follow).
    /// The system and session buses are a socket that does not exist unless `environment`
    /// names a rig's: the daemon never talks to this machine's NetworkManager or desktop.
    public func startAgent(environment: [String: String] = [:], launcher: [String] = [], unit: String = systemUnit) throws {
        let binary = try BuildProducts.executable("ariata-agent")
        let noBus = "unix:path=\(directory.file("no-bus"))"
        let base = try Self.unitEnvironment(unit: unit).merging(
            ["ALSA_CONFIG_PATH": alsaConfig, "NOTIFY_SOCKET": notifySocket.path, "ARIATA_CLOCK_SYNC_FILE": clockSyncFile,
             "DBUS_SYSTEM_BUS_ADDRESS": noBus, "DBUS_SESSION_BUS_ADDRESS": noBus]) { $1 }
        let command = launcher + [binary, "run", "--config", configPath]
        agent = try ChildProcess(command[0], Array(command.dropFirst()), name: "agent", logDirectory: directory.path,
                                 environment: base.merging(environment) { $1 })
    }

    /// Pairs the agent with the box as a person would: a code from the box, then
    /// `ariata-agent onboard --endpoint … --code … --yes` on the rig's config (which gains
    /// `[box]`). Returns onboard's output; throws when it did not pair.
    @discardableResult
    public func pairWithBox() throws -> (stdout: String, stderr: String) {
        let code = try receiver.addBoxPairingCode()
        let binary = try BuildProducts.executable("ariata-agent")
        let child = try ChildProcess(binary, ["onboard", "--endpoint", receiver.endpoint, "--code", code, "--yes",
                                              "--device-name", "rig-board", "--config", configPath],
                                     name: "onboard", logDirectory: directory.path,
                                     environment: ["ALSA_CONFIG_PATH": alsaConfig, "ARIATA_CLOCK_SYNC_FILE": clockSyncFile])
        guard let status = child.wait(timeout: 120) else {
            child.stop()
            throw RigFailure("onboard did not end within 120 s: \(child.stdout()) \(child.stderr())")
        }
        guard status == 0 else { throw RigFailure("onboard failed (\(status)): \(child.stdout()) \(child.stderr())") }
        return (child.stdout(), child.stderr())
    }

    /// Says what the agent's clock-synchronisation hook reports from now on.
    public func setClockSynchronised(_ synchronised: Bool) throws {
        try (synchronised ? "synchronised\n" : "unsynchronised\n").write(toFile: clockSyncFile, atomically: true, encoding: .utf8)
    }

    /// SIGTERM; returns the exit status (nil when it did not exit within `timeout`).
    public func stopAgent(timeout: TimeInterval = 30) -> Int32? {
        guard let agent else { return nil }
        agent.signal(SIGTERM)
        let status = agent.wait(timeout: timeout)
        return status
    }

    public var agentLog: String { agent?.stderr() ?? "" }

    /// The agent's queue, read-only, once the daemon has created it and run its first
    /// maintenance round.
    public func openDatabase(timeout: TimeInterval = 30) throws -> AgentDatabase {
        var database: AgentDatabase?
        do {
            try waitUntil("the daemon's first maintenance round", timeout: timeout) {
                if database == nil { database = try? AgentDatabase(readOnlyPath: databasePath) }
                return (try? database?.agentState.storedLiveness().isEmpty == false) ?? false
            }
        } catch {
            // Say why: the agent's own words are the first thing to read.
            throw RigFailure("\(error); agent \(agent?.isRunning == true ? "running" : "not running"), its log:\n\(agentLog)")
        }
        guard let database else { throw RigFailure("no queue at \(databasePath)") }
        return database
    }

    /// Appends health samples (heart rates, one per line) to the health file.
    public func appendHeartRates(_ values: [Int], at time: Date = Date()) throws {
        let formatter = ISO8601DateFormatter()
        let lines = values.enumerated().map { i, v in
            "{\"timestamp\":\"\(formatter.string(from: time.addingTimeInterval(Double(i))))\",\"hr\":\(v)}\n"
        }.joined()
        guard let handle = FileHandle(forWritingAtPath: healthPath) else { throw RigFailure("cannot open \(healthPath)") }
        handle.seekToEndOfFile()
        handle.write(Data(lines.utf8))
        try handle.close()
    }

    /// Plugs a capture device in while the agent runs: `name` is added to the agent's ALSA
    /// configuration (alsa-lib reads it again at the next open, as it does when a card
    /// appears) as a `file` device fed `input` (raw 16 kHz S16_LE mono) at real-time pace
    /// through a FIFO of its own.
    public func plugInDevice(_ name: String, input: String) throws {
        let fifo = directory.file("\(name).fifo")
        guard mkfifo(fifo, 0o600) == 0 else { throw RigFailure("mkfifo \(fifo) failed") }
        pluggedFeeders.append(try ChildProcess("python3", ["\(Repository.path("tools/demo/pcm-feeder.py"))", input, fifo],
                                               name: "pcm-feeder-\(name)", logDirectory: directory.path))
        let text = try String(contentsOfFile: alsaConfig, encoding: .utf8) + """
            pcm.\(name) {
                type file
                slave.pcm "null"
                file "/dev/null"
                infile "\(fifo)"
                format "raw"
            }

            """
        try text.write(toFile: alsaConfig, atomically: true, encoding: .utf8)
    }

    /// Restarts the NMEA feed with epochs starting now (after gpsd was restarted, say).
    public func restartFeed() {
        feeder.stop()
        feeder = NMEAFeeder(rig: gps, epochs: NMEADrive.synthetic(epochs: driveSeconds, start: Date()), period: drivePeriod)
        feeder.start()
    }
}
