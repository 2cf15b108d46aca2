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
    /// The coverage ledger's side: told the stream's state whenever something happens to it.
    private let coverage: CoverageRecorder?

    private struct State {
        var current: (any CaptureStream)?
        var paused: Bool
        /// Why it is paused, for the coverage ledger (a person's pause, the server, ...).
        var pausedFor: CoverageState = .paused
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
    public convenience init(stream: StreamName, paused: Bool, logger: Logger, make: @escaping @Sendable () -> any CaptureStream) {
        self.init(stream: stream, paused: paused ? .paused : nil, coverage: nil, logger: logger, make: make)
    }

    /// `paused`: why it starts paused, nil when it starts.
    init(stream: StreamName, paused: CoverageState?, coverage: CoverageRecorder?, logger: Logger,
         make: @escaping @Sendable () -> any CaptureStream) {
        self.stream = stream
        self.make = make
        self.logger = logger
        self.coverage = coverage
        state = Mutex(State(current: nil, paused: paused != nil, pausedFor: paused ?? .paused))
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
        // A stream just started counts as capturing; the next liveness check says otherwise.
        if started != nil { coverage?.enter(stream, .captured) } else { noteCoverage() }
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
    /// `reason`: why, for the coverage ledger (a pause by hand when nil).
    public func setPaused(_ paused: Bool, until: Date? = nil, why: String? = nil, reason: CoverageState? = nil) {
        let changed = state.withLock { s -> Bool in
            defer {
                s.paused = paused
                s.pausedFor = reason ?? .paused
            }
            return s.paused != paused
        }
        guard changed else {
            // Still paused, perhaps for another reason now (quiet hours, then a pause by hand).
            if paused { noteCoverage() }
            return
        }
        if paused {
            let end = why.map { "because \($0)" } ?? until.map { "until \(RFC3339.string(from: $0)) (or 'ariata-agent resume \(stream.rawValue)')" }
                ?? "until 'ariata-agent resume \(stream.rawValue)'"
            // Said once it is true: stop() has ended capture and written the chunk in progress.
            stop()
            logger.notice("\(stream.rawValue) paused: capture stopped \(end)")
            noteCoverage()
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
        noteCoverage()
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
        let liveness = currentLiveness()
        // The maintenance round asks this: a stream that lost its device or its fix shows
        // in the ledger from that round.
        noteCoverage(liveness)
        return liveness
    }

    private func currentLiveness() -> Liveness {
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

    /// Tells the coverage ledger what the stream is doing now.
    private func noteCoverage(_ liveness: Liveness? = nil) {
        guard let coverage else { return }
        let (paused, pausedFor, sleeping) = state.withLock { ($0.paused, $0.pausedFor, $0.sleeping) }
        let now: CoverageState
        if paused {
            now = pausedFor
        } else if sleeping {
            now = .asleep
        } else {
            switch liveness ?? currentLiveness() {
            case .healthy: now = .captured
            case .asleep: now = .asleep
            case .disabled: now = pausedFor
            // Not live: the location stream has no fix; the others lack their device or
            // source, unless one of its sources still captures.
            case .unhealthy:
                if state.withLock({ $0.current })?.capturesInPart() == true {
                    now = .captured
                } else {
                    now = stream == .location ? .noFix : .deviceMissing
                }
            }
        }
        coverage.enter(stream, now)
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
    static func forEnabledStreams(of config: AgentConfig, stopped: [StreamName: StreamControl.Held], factory: any ComponentFactory,
                                  control: StreamControl, coverage: CoverageRecorder, database: AgentDatabase,
                                  logger: Logger) -> [StreamName: StreamSupervisor] {
        var supervisors: [StreamName: StreamSupervisor] = [:]
        for stream in StreamName.allCases where config.isEnabled(stream) {
            let streamLogger = Logger(.stream(stream))
            supervisors[stream] = StreamSupervisor(stream: stream, paused: stopped[stream]?.reason, coverage: coverage, logger: logger) {
                factory.makeStream(stream, config: control.streamConfig(), database: database, gate: control.gate, logger: streamLogger)
            }
        }
        return supervisors
    }
}
