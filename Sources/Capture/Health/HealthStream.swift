import AgentCore
import Foundation
import Logging
import Platform
import Synchronization

/// The `health` stream: runs every configured source on a thread of its own and says
/// how they are. Sources write to the queue themselves (the queue is the only buffer).
public final class HealthStream: CaptureStream, Sendable {
    public let stream = StreamName.health
    public let config: HealthConfig
    public var sources: [any HealthSource] { runners.map(\.source) }
    private let runners: [HealthSourceRunner]
    private let logger: Logger
    private let started = Mutex(false)
    /// Sources that could not be made (no such kind), with why.
    private let failures = Mutex<[String]>([])

    public convenience init(config: HealthConfig, database: AgentDatabase, clock: any WallClock = SystemClock(),
                            clockTrust: ClockTrust = .live(trustSystemClock: false), bleTuning: BLETuning = BLETuning(), logger: Logger) {
        self.init(config: config, queue: database.recordQueue, clock: clock, clockTrust: clockTrust, bleTuning: bleTuning,
                  agentState: database.agentState, logger: logger)
    }

    /// - Parameter clockTrust: whether the wall clock can be believed; samples dated from
    ///   a clock that cannot are written held, with their place on the boot clock.
    public init(config: HealthConfig, queue: any HealthRecordQueue, clock: any WallClock = SystemClock(),
                clockTrust: ClockTrust = .live(trustSystemClock: false), bleTuning: BLETuning = BLETuning(),
                agentState: AgentStateStore? = nil, logger: Logger) {
        self.config = config
        self.logger = logger
        let context = HealthSourceContext(health: config, queue: queue, clock: clock, clockTrust: clockTrust,
                                          bleTuning: bleTuning, agentState: agentState, logger: logger)
        var unmade: [String] = []
        let made = config.sources.compactMap { settings -> (any HealthSource)? in
            guard let source = HealthSourceKinds.make(settings, context: context) else {
                unmade.append("\(settings.name): cannot start: no kind \"\(settings.kind)\" in this agent")
                return nil
            }
            return source
        }
        runners = made.enumerated().map { index, source in
            HealthSourceRunner(source: source, threadName: Self.threadName(index), logger: logger)
        }
        failures.withLock { $0 = unmade }
    }

    /// The kernel's name of the thread that reads source `index` (0-based): `ariata-health-1`
    /// for the first, in the order of `[[health.source]]` (the start is logged with it).
    static func threadName(_ index: Int) -> String {
        let name = "ariata-health-\(index + 1)"
        return name.utf8.count <= NamedThread.maxNameBytes ? name : "ariata-hlth-\(index + 1)"
    }

    public func start() {
        let first = started.withLock { started in
            defer { started = true }
            return !started
        }
        guard first else { return }
        let names = runners.filter { $0.start() }.map { "\($0.source.name) (thread \($0.threadName))" }
        if !names.isEmpty {
            logger.info("health stream started with \(names.count) source(s): \(names.joined(separator: ", "))")
        }
    }

    /// Asks every source to commit what it has read, and waits for all of them.
    public func stop() {
        started.withLock { $0 = false }
        for runner in runners { runner.stop() }
    }

    /// One source's trouble is that source's: a source whose reading stopped is started
    /// again alone (with its own backoff), a source retrying by itself is left to it, and
    /// the stream's other sources go on. So the supervisor never restarts the whole
    /// stream for a source (docs/streams/health.md, "One source's trouble").
    public func restartFaults() -> String? {
        let done = runners.compactMap { $0.restartIfEnded() }
        let retrying = zip(runners, statuses()).filter { $0.0.ended == nil && $0.1.liveness.isUnhealthy }.map(\.1.name)
        var said: [String] = done
        if !retrying.isEmpty { said.append("left \(retrying.joined(separator: ", ")) retrying by itself") }
        if !failures.withLock({ $0.isEmpty }) { said.append("a source that cannot be made waits for the config to be corrected") }
        if said.isEmpty { said.append("no source to start again yet") }
        return said.joined(separator: "; ") + "; its other sources go on"
    }

    public func liveness() -> Liveness {
        if let failure = failures.withLock({ $0.first }) { return .unhealthy(reason: failure) }
        let unhealthy = zip(runners, statuses()).map { ($0.1.name, $0.0.liveness()) }.filter { !$0.1.isHealthy }
        guard let first = unhealthy.first else { return .healthy }
        let reason = unhealthy.map { "\($0.0): \($0.1.reason ?? $0.1.state)" }.joined(separator: "; ")
        return .unhealthy(reason: reason, code: first.1.code)
    }

    /// One live source is enough for the coverage ledger to count the stream as capturing
    /// (docs/decisions/0015-coverage-written-at-changes.md).
    public func capturesInPart() -> Bool {
        runners.contains { $0.liveness().isHealthy }
    }

    /// Each source's liveness and counters (for `status` and the backfill progress).
    public func statuses() -> [HealthSourceStatus] { runners.map { $0.source.status() } }

    /// The Bluetooth LE sensors' battery and connection, for `status` (nothing without one).
    public func details() -> [String: String] {
        let sensors = statuses().compactMap { status in status.kindStatus?.sensor(of: status) }
        return sensors.isEmpty ? [:] : [StreamCounter.bleSensors: SensorStatus.encode(sensors)]
    }

    public func counters() -> [String: Int] {
        let all = statuses()
        return [StreamCounter.malformedLines: all.reduce(0) { $0 + $1.malformedLines },
                StreamCounter.refusedSamples: all.reduce(0) { $0 + $1.rejectedSamples },
                StreamCounter.serverSkippedSamples: all.reduce(0) { $0 + $1.serverSkippedSamples }]
    }
}
