import AgentCore
import ArgumentParser
import Daemon
import Foundation
import Logging
import ServiceLifecycle

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Runs the agent: captures the enabled streams and uploads them (what systemd starts).",
        discussion: """
            Reads the configuration, opens the queue database, starts each enabled stream \
            (location, microphone, health) unless it is paused, and uploads the queue every \
            [upload] interval. Logs go to standard error, one line per event, with syslog \
            priority prefixes that journald understands (a timestamp instead on a terminal).

            Signals: SIGTERM or SIGINT stop capture, write the audio chunk in progress, \
            abort an upload in flight (its records stay pending) and exit 0. SIGHUP rereads \
            the configuration and restarts the streams and the uploader with it (a bad file \
            is reported and the running configuration kept). SIGUSR1 applies pause switches \
            at once.

            Under systemd (Type=notify) it reports READY=1 when started, a STATUS= line and \
            WATCHDOG=1 every 30 s.

            On a connection NetworkManager calls metered (read over the system bus) the \
            scheduled uploads hold back what [upload] on_metered says (by default audio; \
            location and health go) until an unmetered one; 'ariata-agent sync' sends \
            everything. As the user service (the user unit sets ARIATA_SERVICE_MODE=user) it \
            shows desktop notices for what only you can fix: a full disk, a refused token, \
            a lost microphone, a stream the server switched off ([notify] enabled).

            It refuses to start until 'ariata-agent onboard' has set an endpoint and a token.

            Exit status: 0 after a clean stop; 78 when the configuration is missing, broken \
            or not onboarded; 73 when the queue database cannot be opened or created; 75 \
            when another ariata-agent already runs on the same database.
            """)

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        // A peer that resets a socket (gpsd, the server) must be an error, not a signal.
        signal(SIGPIPE, SIG_IGN)
        let config: AgentConfig
        do {
            config = try AgentConfig.load(path: options.config)
        } catch {
            FileHandle.standardError.write(Data("ariata-agent: \(error)\n".utf8))
            throw ExitCode(78)   // EX_CONFIG
        }
        let level = Logger.Level(rawValue: config.logLevel) ?? .info
        LoggingSystem.bootstrap { label in JournalLogHandler(label: label, level: level) }
        let logger = Logger(.agent)
        guard config.isOnboarded else {
            logger.critical("\(DaemonError.notOnboarded(file: config.file))")
            throw ExitCode(78)
        }
        let database: AgentDatabase
        do {
            database = try AgentDatabase(path: config.storage.database, logger: Logger(.database))
        } catch {
            logger.critical("\(error)")
            throw ExitCode(73)   // EX_CANTCREAT
        }
        // The start-up runs in stages, each dropping what the one before touched, so that its
        // resident set never holds all of the start at once (docs/decisions/0005-start-up-page-drop.md).
        MemoryFootprint.dropMappedFilePages()
        logger.info("ariata-agent \(AgentVersion.string) starting", metadata: [
            "config": "\(config.file)", "database": "\(config.storage.database)",
            "endpoint": "\(config.server.ingestURL)", "device_id": "\(config.server.deviceID)",
        ])
        let daemon = AgentDaemon(config: config, database: database, factory: LiveComponents(),
                                 roundInterval: TimeInterval(config.daemon.checkInterval), logger: logger)
        let path = options.config
        let service = AgentService(daemon: daemon, logger: logger) { try AgentConfig.load(path: path) }
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: service)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        do {
            try await group.run()
        } catch let error as DaemonError {
            logger.critical("\(error)")
            throw ExitCode(75)   // EX_TEMPFAIL
        }
    }
}
