import AgentCore
import Foundation
import Logging
import Platform
import ServiceLifecycle
import UnixSignals

/// The daemon as a swift-service-lifecycle service. SIGTERM and SIGINT (the group's
/// graceful-shutdown signals) stop capture, finish the audio chunk in progress, let the
/// uploader abort cleanly and return; SIGHUP reloads the configuration; SIGUSR1 applies
/// pause switches at once (`ariata-agent pause` sends it).
public struct AgentService: Service {
    let daemon: AgentDaemon
    let loadConfig: @Sendable () throws -> AgentConfig
    let logger: Logger

    public init(daemon: AgentDaemon, logger: Logger, loadConfig: @escaping @Sendable () throws -> AgentConfig) {
        self.daemon = daemon
        self.logger = logger
        self.loadConfig = loadConfig
    }

    public func run() async throws {
        let lock = FileLock.daemon(databasePath: daemon.database.path)
        guard let held = try lock.tryAcquire() else {
            throw DaemonError.alreadyRunning(database: daemon.database.path)
        }
        defer { held.release() }
        try? daemon.database.agentState.set(AgentStateKey.daemonPID, String(getpid()))

        await NamedThread.run(name: "ariata-start") { daemon.start() }
        let signals = await UnixSignalsSequence(trapping: .sighup, .sigusr1)
        await cancelWhenGracefulShutdown {
            for await signal in signals {
                if signal == .sighup {
                    await reload()
                } else {
                    await NamedThread.run(name: "ariata-pause") { daemon.applyPauseSwitches() }
                }
            }
        }
        logger.info("shutting down")
        await NamedThread.run(name: "ariata-stop") { daemon.stop() }
        try? daemon.database.agentState.set(AgentStateKey.daemonPID, nil)
    }

    private func reload() async {
        do {
            let config = try loadConfig()
            await NamedThread.run(name: "ariata-reload") { daemon.reload(config) }
        } catch {
            logger.error("not reloading: \(error); the agent keeps running with the configuration it has")
        }
    }
}

public enum DaemonError: Error, CustomStringConvertible {
    case alreadyRunning(database: String)
    case notOnboarded(file: String)

    public var description: String {
        switch self {
        case .alreadyRunning(let database):
            return "another ariata-agent is already running on \(database): see 'systemctl status ariata-agent' or 'ariata-agent status'"
        case .notOnboarded(let file):
            return "this device is not set up yet (no endpoint or token in \(file)): run 'ariata-agent onboard' first"
        }
    }
}
