import AgentCore
import Foundation
import Logging
import Synchronization

/// The `health` stream: runs every configured source on a thread of its own and says
/// how they are. Sources write to the queue themselves (the queue is the only buffer).
public final class HealthStream: CaptureStream, @unchecked Sendable {
    // @unchecked: `sources` is immutable after init; `threads` is behind its Mutex.
    public let stream = StreamName.health
    public let config: HealthConfig
    public let sources: [any HealthSource]
    private let logger: Logger
    private let setupErrors: [String]
    private let running = Mutex<[(Thread, DispatchSemaphore)]>([])

    public convenience init(config: HealthConfig, queue: SQLiteQueue, clock: any WallClock = SystemClock(),
                            clockTrust: ClockTrust = .live(trustSystemClock: false), logger: Logger) {
        self.init(config: config, queue: queue as any HealthRecordQueue, clock: clock, clockTrust: clockTrust, logger: logger)
    }

    /// - Parameter clockTrust: whether the wall clock can be believed; samples dated from
    ///   a clock that cannot are written held, with their place on the boot clock.
    public init(config: HealthConfig, queue: any HealthRecordQueue, clock: any WallClock = SystemClock(),
                clockTrust: ClockTrust = .live(trustSystemClock: false), logger: Logger) {
        self.config = config
        self.logger = logger
        var sources: [any HealthSource] = []
        var errors: [String] = []
        if config.enabled {
            for source in config.sources {
                do {
                    sources.append(try HealthSourceFactory.make(source, queue: queue, commitInterval: TimeInterval(config.commitInterval),
                                                                clock: clock, clockTrust: clockTrust, logger: logger))
                } catch {
                    errors.append("\(source.name): cannot start: \(error)")
                }
            }
        }
        self.sources = sources
        setupErrors = errors
    }

    public func start() {
        running.withLock { threads in
            guard threads.isEmpty else { return }
            for source in sources {
                let done = DispatchSemaphore(value: 0)
                let label = String("health:\(source.name)".prefix(15))
                let thread = Thread {
                    // Names the kernel thread so `top -H` and /proc show which source it is
                    // (Foundation's Thread.name does not reach the kernel on Linux).
                    if let comm = FileHandle(forWritingAtPath: "/proc/thread-self/comm") {
                        try? comm.write(contentsOf: Data(label.utf8))
                        try? comm.close()
                    }
                    source.run()
                    done.signal()
                }
                thread.name = "health:\(source.name)"
                threads.append((thread, done))
                thread.start()
            }
        }
        if !sources.isEmpty {
            logger.info("health stream started with \(sources.count) source(s): \(sources.map(\.name).joined(separator: ", "))")
        }
    }

    /// Asks every source to commit what it has read, and waits for all of them.
    public func stop() {
        let threads = running.withLock { threads in
            defer { threads.removeAll() }
            return threads
        }
        for source in sources { source.requestStop() }
        for (_, done) in threads { done.wait() }
    }

    public func health() -> StreamHealth {
        guard config.enabled else { return .disabled }
        if let error = setupErrors.first { return .unhealthy(reason: error) }
        let unhealthy = statuses().filter { !$0.health.isHealthy }
        guard let first = unhealthy.first else { return .healthy }
        let reason = unhealthy.map { "\($0.name): \($0.health.reason ?? $0.health.state)" }.joined(separator: "; ")
        return .unhealthy(reason: reason, code: first.health.code)
    }

    /// Each source's health and counters (for `status` and the backfill progress).
    public func statuses() -> [HealthSourceStatus] { sources.map { $0.status() } }

    public func counters() -> [String: Int] {
        let all = statuses()
        return [StreamCounter.malformedLines: all.reduce(0) { $0 + $1.malformedLines },
                StreamCounter.refusedSamples: all.reduce(0) { $0 + $1.rejectedSamples }]
    }
}
