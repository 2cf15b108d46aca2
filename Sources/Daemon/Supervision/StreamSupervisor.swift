import AgentCore
import Foundation
import Logging
import Synchronization

/// Holds one capture stream for the daemon: starts it unless paused, stops it on pause,
/// restarts it when the supervisor asks.
public final class StreamSupervisor: SupervisedComponent, Sendable {
    public let stream: StreamName
    private let make: @Sendable () -> any CaptureStream
    private let state: Mutex<State>
    private let logger: Logger

    private struct State {
        var current: (any CaptureStream)?
        var paused: Bool
        /// Stopped while the machine sleeps (`SleepWatch`): not started, not restarted.
        var sleeping = false
        /// Why the machine seems awake while capture is still held for its sleep (nil: no
        /// such sign): the stream is then a fault, not merely asleep.
        var heldAwake: String?
        /// Counters of the streams this supervisor stopped: totals outlive a restart.
        var stoppedCounters: [String: Int] = [:]
    }

    /// `make` builds a fresh stream (a restart uses a new one, so no state of a stream that
    /// went wrong is carried over).
    public init(stream: StreamName, paused: Bool, logger: Logger, make: @escaping @Sendable () -> any CaptureStream) {
        self.stream = stream
        self.make = make
        self.logger = logger
        state = Mutex(State(current: nil, paused: paused))
    }

    public var componentName: String { stream.rawValue }

    public var isPaused: Bool { state.withLock { $0.paused } }

    public func start() {
        let started: (any CaptureStream)? = state.withLock { s in
            guard !s.paused, !s.sleeping, s.current == nil else { return nil }
            s.current = make()
            return s.current
        }
        started?.start()
    }

    /// Stops the stream; capture in progress is finished and written (the audio chunk).
    public func stop() {
        let running = state.withLock { s -> (any CaptureStream)? in
            defer { s.current = nil }
            return s.current
        }
        running?.stop()
        if let last = running?.counters() {
            state.withLock { $0.stoppedCounters.merge(last, uniquingKeysWith: +) }
        }
    }

    /// The stream's counters since the daemon started, across restarts and pauses.
    public func counters() -> [String: Int] {
        let (current, stopped) = state.withLock { ($0.current, $0.stoppedCounters) }
        return stopped.merging(current?.counters() ?? [:], uniquingKeysWith: +)
    }

    /// What the running stream is doing now (nothing while paused or stopped).
    public func details() -> [String: String] {
        state.withLock { $0.current }?.details() ?? [:]
    }

    /// `until`: when a timed pause ends by itself (for the log; the daemon resumes it).
    /// `why`: a pause the daemon decided (the power policy), for the log.
    public func setPaused(_ paused: Bool, until: Date? = nil, why: String? = nil) {
        let changed = state.withLock { s -> Bool in
            defer { s.paused = paused }
            return s.paused != paused
        }
        guard changed else { return }
        if paused {
            let end = why.map { "because \($0)" } ?? until.map { "until \(RFC3339.string(from: $0)) (or 'ariata-agent resume \(stream.rawValue)')" }
                ?? "until 'ariata-agent resume \(stream.rawValue)'"
            // Said once it is true: stop() has ended capture and written the chunk in progress.
            stop()
            logger.notice("\(stream.rawValue) paused: capture stopped \(end)")
        } else {
            logger.notice("\(stream.rawValue) resumed")
            start()
        }
    }

    /// The machine is about to sleep: capture stops (the chunk in progress is written) and
    /// nothing starts it again until `wake()`.
    public func sleep() {
        state.withLock { s in
            s.sleeping = true
            s.heldAwake = nil
        }
        stop()
    }

    /// The machine woke: capture starts again (a new chunk), unless paused meanwhile.
    public func wake() {
        state.withLock { s in
            s.sleeping = false
            s.heldAwake = nil
        }
        start()
    }

    /// The sleep watch sees the machine awake while logind has not ended its sleep:
    /// `reason` says why (nil when that sign went); capture stays held, as a fault.
    public func heldForSleep(whileAwake reason: String?) {
        state.withLock { s in
            guard s.sleeping else { return }
            s.heldAwake = reason
        }
    }

    public func liveness() -> Liveness {
        let (current, paused, sleeping, heldAwake) = state.withLock { ($0.current, $0.paused, $0.sleeping, $0.heldAwake) }
        if paused { return .disabled }
        if sleeping { return heldAwake.map { .unhealthy(reason: $0) } ?? .asleep }
        return current?.liveness() ?? .unhealthy(reason: "not running")
    }

    /// The stream's own restart of its parts at fault, when it has one (the health stream).
    public func restartFaults() -> String? {
        let current = state.withLock { s in s.paused || s.sleeping ? nil : s.current }
        return current?.restartFaults()
    }

    public func restart() {
        guard !isPaused, !state.withLock({ $0.sleeping }) else { return }
        stop()
        start()
    }
}

extension StreamSupervisor {
    /// One supervisor per stream `config` enables, paused when `stopped` names it; each
    /// start makes the stream with the settings then in force, the server's latest included.
    static func forEnabledStreams(of config: AgentConfig, stopped: [StreamName: String], factory: any ComponentFactory,
                                  control: StreamControl, database: AgentDatabase, logger: Logger) -> [StreamName: StreamSupervisor] {
        var supervisors: [StreamName: StreamSupervisor] = [:]
        for stream in StreamName.allCases where config.isEnabled(stream) {
            let streamLogger = Logger(.stream(stream))
            supervisors[stream] = StreamSupervisor(stream: stream, paused: stopped[stream] != nil, logger: logger) {
                factory.makeStream(stream, config: control.streamConfig(), database: database, gate: control.gate, logger: streamLogger)
            }
        }
        return supervisors
    }
}
