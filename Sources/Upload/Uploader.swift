import AgentCore
import Dispatch
import Foundation
import Logging
import Synchronization

/// Sends the queue to the ingest endpoint: a cycle every `[upload] interval` seconds (and
/// at start, and on `syncNow`), retrying by the contract's rules.
///
/// Concurrency is Dispatch only: a `ReliableTimer` triggers cycles, and every cycle (the
/// timer's and `syncNow`'s) runs through one serial queue, so two cycles never overlap
/// and never send the same batch twice at once. The state between cycles (backoff,
/// breaker, token pause) sits behind a lock that is never held across a request.
public final class Uploader: Sendable {
    private let upload: UploadConfig
    private let policy: UploadPolicy
    private let store: any UploadStore
    private let clock: any WallClock
    private let logger: Logger
    private let makeTransport: HTTPTransportFactory
    private let random: @Sendable () -> Double
    private let state: UploaderStateBox
    private let stopping = Atomic<Bool>(false)
    private let cycles = DispatchQueue(label: "ariata.upload.cycles")
    private let timer = Mutex<ReliableTimer?>(nil)
    /// Taken for each scheduled cycle (the daemon's), so `ariata-agent sync` and the
    /// daemon never upload at the same time.
    private let uploadLock: FileLock?

    /// - Parameters:
    ///   - store: the queue (`SQLiteQueue`).
    ///   - clock: the time used for backoff, pauses and the body's `timestamp`;
    ///     a `ManualClock` makes schedules testable without sleeping.
    ///   - makeTransport: one transport per cycle; libcurl unless a test wraps it.
    ///   - random: jitter source, values in [0, 1).
    ///   - uploadLock: held during each scheduled cycle (the daemon passes
    ///     `FileLock.upload(databasePath:)`; `sync` takes that lock itself).
    public init(server: ServerConfig, upload: UploadConfig, store: any UploadStore,
                clock: any WallClock = SystemClock(), logger: Logger = Logger(label: "ariata.upload"),
                policy: UploadPolicy = UploadPolicy(),
                makeTransport: @escaping HTTPTransportFactory = CurlTransport.factory,
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
                uploadLock: FileLock? = nil) {
        self.uploadLock = uploadLock
        self.upload = upload
        self.policy = policy
        self.store = store
        self.clock = clock
        self.logger = logger
        self.makeTransport = makeTransport
        self.random = random
        state = UploaderStateBox(UploaderState(
            settings: ServerSettings(server),
            breaker: CircuitBreaker(threshold: policy.breakerThreshold),
            authPause: AuthPause(first: policy.authPauseFirst, maximum: policy.authPauseMaximum)))
    }

    deinit {
        // Taken out of the lock first: stop() may wait for a handler that wants the lock.
        let current = timer.withLock { $0 }
        current?.stop()
    }

    // MARK: Life cycle

    /// Starts the timer: a first cycle at once (daemon start), then one every interval,
    /// earlier when a retry falls due. Returns at once.
    public func start() {
        stopping.store(false, ordering: .sequentiallyConsistent)
        let fresh = ReliableTimer(label: "ariata.upload.timer") { [weak self] in self?.timerFired() }
        let old = timer.withLock { current -> ReliableTimer? in
            defer { current = fresh }
            return current
        }
        old?.stop()
        fresh.start(interval: TimeInterval(upload.interval), firstAfter: 0)
    }

    /// Stops: aborts a request in flight (within about a second), lets the cycle finish
    /// its bookkeeping and returns when it has. Records not confirmed stay pending.
    /// Not to be called from a progress callback.
    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        let old = timer.withLock { current -> ReliableTimer? in
            defer { current = nil }
            return current
        }
        old?.stop()
        cycles.sync {}
    }

    /// One whole cycle now, on the calling thread, ignoring backoff, breaker and token
    /// pause (the user asked for it), draining every stream it can. `progress` is called
    /// on the calling thread at the start of each stream and after every batch.
    @discardableResult
    public func syncNow(progress: ((SyncProgress) -> Void)? = nil) -> SyncReport {
        let report = cycles.sync { cycle(forced: true, progress: progress) }
        rescheduleTimer()
        return report
    }

    /// The cycle the timer runs: honours backoff, the breaker and the token pause.
    @discardableResult
    public func runScheduledCycle() -> SyncReport {
        cycles.sync { cycle(forced: false, progress: nil) }
    }

    /// New `[server]` settings (a new token after `onboard`, say): ends a token pause and
    /// forgets the failures of the old endpoint, then runs a cycle soon.
    public func updateServer(_ server: ServerConfig) {
        let settings = ServerSettings(server)
        state.with { s in
            guard s.settings != settings else { return }
            s.settings = settings
            s.authPause.clear()
            s.breaker = CircuitBreaker(threshold: policy.breakerThreshold)
            s.retries.removeAll()
            s.lastFailure = nil
            s.publishedAuthPause = nil
            s.publishedRetryAt = nil
        }
        try? store.setState(AgentStateKey.uploadAuthPausedUntil, nil)
        try? store.setState(AgentStateKey.uploadRetryAt, nil)
        timer.withLock { $0 }?.fireNow()
    }

    // MARK: Reading

    /// The uploader's health for the health coordinator.
    public func health() -> StreamHealth {
        let now = clock.now()
        return state.with { s in
            if let problem = s.settings.configurationProblem { return .unhealthy(reason: problem) }
            if s.authPause.refusals > 0 {
                let until = s.authPause.until.map { "; uploads paused until \(RFC3339.string(from: $0))" } ?? ""
                return .unhealthy(reason: "the server refused the device token\(until): \(AgentErrorCode.invalidToken.hint)",
                                  code: .invalidToken)
            }
            let last = s.lastFailure
            switch s.breaker.state(at: now) {
            case .open(let until):
                return .unhealthy(reason: "the endpoint is failing (\(last?.reason ?? "no answer")); next try at \(RFC3339.string(from: until))",
                                  code: last?.code)
            case .halfOpen:
                return .unhealthy(reason: "the endpoint is failing (\(last?.reason ?? "no answer")); probing it", code: last?.code)
            case .closed:
                break
            }
            if let (stream, retry) = s.retries.filter({ $0.value.failures > 0 }).min(by: { $0.key < $1.key }) {
                let at = retry.nextAttemptAt.map { "; retrying at \(RFC3339.string(from: $0))" } ?? ""
                return .unhealthy(reason: "\(stream.rawValue): \(retry.reason ?? "upload failed")\(at)", code: retry.code)
            }
            return .healthy
        }
    }

    /// When things may next try (tests read backoff from here instead of sleeping).
    public func schedule() -> UploadSchedule {
        let now = clock.now()
        return state.with { s in
            let waiting = s.retries.filter { $0.value.failures > 0 }
            return UploadSchedule(breaker: s.breaker.state(at: now), breakerTrips: s.breaker.trips,
                                  authPausedUntil: s.authPause.isPaused(at: now) ? s.authPause.until : nil,
                                  streamRetryAt: waiting.compactMapValues(\.nextAttemptAt),
                                  streamFailures: waiting.mapValues(\.failures))
        }
    }

    /// The wall-clock time of the next timer run, nil when not started.
    public var nextCycleAt: Date? { timer.withLock { $0?.nextFireDate } }

    // MARK: Internals

    private func cycle(forced: Bool, progress: ((SyncProgress) -> Void)?) -> SyncReport {
        var cycle = UploadCycle(
            forced: forced, upload: upload, policy: policy, store: store, clock: clock, logger: logger,
            state: state, makeTransport: makeTransport, random: random,
            isStopping: { [weak self] in self?.stopping.load(ordering: .relaxed) ?? true },
            progress: progress)
        return cycle.run()
    }

    private func timerFired() {
        // One upload at a time across processes: while `ariata-agent sync` holds the lock,
        // this cycle is skipped (sync is sending the same records right now).
        var held: FileLock.Held?
        if let uploadLock {
            held = try? uploadLock.tryAcquire()
            if held == nil {
                logger.info("skipping this upload cycle: another upload ('ariata-agent sync') is running")
                rescheduleTimer()
                return
            }
        }
        defer { held?.release() }
        _ = cycles.sync { cycle(forced: false, progress: nil) }
        rescheduleTimer()
    }

    /// Brings the next timer run forward to when a waiting stream, the breaker or the
    /// token pause falls due, when that is before the regular interval.
    private func rescheduleTimer() {
        guard !stopping.load(ordering: .relaxed), let timer = timer.withLock({ $0 }) else { return }
        let now = clock.now()
        let due: Date? = state.with { s in
            if s.authPause.isPaused(at: now) { return s.authPause.until }
            if case .open(let until) = s.breaker.state(at: now) { return until }
            return s.retries.values.compactMap(\.nextAttemptAt).filter { $0 > now }.min()
        }
        guard let due else { return }
        let wait = max(due.timeIntervalSince(now), 1)
        if wait < TimeInterval(upload.interval) { timer.reschedule(after: wait) }
    }
}
