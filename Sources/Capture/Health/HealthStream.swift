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
    public let sources: [any HealthSource]
    private let logger: Logger
    private let running = Mutex<[NamedThread]>([])
    /// Sources that could not be made or given a thread, with why.
    private let failures = Mutex<[String]>([])

    public convenience init(config: HealthConfig, database: AgentDatabase, clock: any WallClock = SystemClock(),
                            clockTrust: ClockTrust = .live(trustSystemClock: false), logger: Logger) {
        self.init(config: config, queue: database.recordQueue, clock: clock, clockTrust: clockTrust, logger: logger)
    }

    /// - Parameter clockTrust: whether the wall clock can be believed; samples dated from
    ///   a clock that cannot are written held, with their place on the boot clock.
    public init(config: HealthConfig, queue: any HealthRecordQueue, clock: any WallClock = SystemClock(),
                clockTrust: ClockTrust = .live(trustSystemClock: false), bleTuning: BLETuning = BLETuning(), logger: Logger) {
        self.config = config
        self.logger = logger
        let context = HealthSourceContext(health: config, queue: queue, clock: clock, clockTrust: clockTrust,
                                          bleTuning: bleTuning, logger: logger)
        var unmade: [String] = []
        sources = config.sources.compactMap { settings in
            guard let source = HealthSourceKinds.make(settings, context: context) else {
                unmade.append("\(settings.name): cannot start: no kind \"\(settings.kind)\" in this agent")
                return nil
            }
            return source
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
        let started = running.withLock { threads -> [String] in
            guard threads.isEmpty else { return [] }
            var names: [String] = []
            for (index, source) in sources.enumerated() {
                do {
                    let thread = try NamedThread(name: Self.threadName(index)) { stop in source.run(until: stop) }
                    threads.append(thread)
                    names.append("\(source.name) (thread \(thread.name))")
                } catch {
                    failures.withLock { $0.append("\(source.name): cannot start: \(error)") }
                    logger.error("health source \(source.name): cannot start: \(error)")
                }
            }
            return names
        }
        if !started.isEmpty {
            logger.info("health stream started with \(started.count) source(s): \(started.joined(separator: ", "))")
        }
    }

    /// Asks every source to commit what it has read, and waits for all of them.
    public func stop() {
        let threads = running.withLock { threads in
            defer { threads.removeAll() }
            return threads
        }
        for thread in threads { thread.waker.wake() }
        for thread in threads { thread.join() }
    }

    public func liveness() -> Liveness {
        if let failure = failures.withLock({ $0.first }) { return .unhealthy(reason: failure) }
        let unhealthy = statuses().filter { !$0.liveness.isHealthy }
        guard let first = unhealthy.first else { return .healthy }
        let reason = unhealthy.map { "\($0.name): \($0.liveness.reason ?? $0.liveness.state)" }.joined(separator: "; ")
        return .unhealthy(reason: reason, code: first.liveness.code)
    }

    /// Each source's liveness and counters (for `status` and the backfill progress).
    public func statuses() -> [HealthSourceStatus] { sources.map { $0.status() } }

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
