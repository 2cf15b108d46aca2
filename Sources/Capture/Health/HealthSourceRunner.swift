import AgentCore
import Foundation
import Logging
import Platform
import Synchronization

/// One source of the health stream on its thread: starts it, stops it, and starts it
/// again alone when its thread ended without being asked to (the source gave up) or
/// could not be made, after a wait from its own `RetryCounter`. A source that is
/// unhealthy while its thread runs is retrying by itself (a strap away, a file missing)
/// and is left to it: restarting it would only throw its backoff away, and restarting
/// the stream would stop its other sources (docs/streams/health.md, "One source's trouble").
final class HealthSourceRunner: Sendable {
    let source: any HealthSource
    let threadName: String
    private let logger: Logger
    private let state = Mutex(State())
    private let clock: @Sendable () -> TimeInterval

    private struct State {
        var thread: NamedThread?
        /// The thread returned while the stream still ran (or was never made): why.
        var ended: String?
        var failures = RetryCounter()
        var restartAt: TimeInterval = 0
        var restarts = 0
    }

    init(source: any HealthSource, threadName: String, clock: @escaping @Sendable () -> TimeInterval = Monotonic.seconds,
         logger: Logger) {
        self.source = source
        self.threadName = threadName
        self.clock = clock
        self.logger = logger
    }

    /// Starts the source's thread; false (and the reason kept) when no thread could be made.
    @discardableResult
    func start() -> Bool {
        state.withLock { s -> Bool in
            guard s.thread == nil else { return true }
            do {
                let source = self.source
                s.thread = try NamedThread(name: threadName) { [weak self] stop in
                    source.run(until: stop)
                    if !stop.isWoken { self?.threadEnded() }
                }
                s.ended = nil
                return true
            } catch {
                s.ended = "cannot start: \(error)"
                s.restartAt = clock() + s.failures.failed(backoff: HealthSourceTuning.restartAlone)
                logger.error("health source \(source.name): cannot start: \(error)")
                return false
            }
        }
    }

    private func threadEnded() {
        let restartIn = state.withLock { s -> TimeInterval in
            s.ended = "its reading stopped"
            let wait = s.failures.failed(backoff: HealthSourceTuning.restartAlone)
            s.restartAt = clock() + wait
            return wait
        }
        logger.error("health source \(source.name): its reading stopped; it is started again in \(Int(restartIn)) s, alone")
    }

    func stop() {
        let thread = state.withLock { s -> NamedThread? in
            defer { s.thread = nil }
            return s.thread
        }
        thread?.waker.wake()
        thread?.join()
    }

    /// Why the source is not running (its thread ended or could not be made), nil while it runs.
    var ended: String? { state.withLock { $0.ended } }

    /// How often the source was started again alone since the stream started.
    var restarts: Int { state.withLock { $0.restarts } }

    /// Starts the source again when its thread ended and its wait is over. Returns what it
    /// did, for the supervisor's log (nil: nothing to do now).
    func restartIfEnded() -> String? {
        let due = state.withLock { s -> NamedThread?? in
            guard s.ended != nil, clock() >= s.restartAt else { return .none }
            defer { s.thread = nil }
            s.restarts += 1
            return .some(s.thread)
        }
        guard case .some(let old) = due else { return nil }
        old?.join()
        return start() ? "started \(source.name) again" : "cannot start \(source.name) again"
    }

    /// The source's liveness: its own, or why it is not running.
    func liveness() -> Liveness {
        if let ended { return .unhealthy(reason: ended) }
        return source.status().liveness
    }
}
