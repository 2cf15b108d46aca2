import AgentCore
import Dispatch
import Foundation
import Logging
import Platform
import Synchronization

/// Sends the queue to the ingest endpoint: a cycle every `[upload] interval` seconds (and
/// at start, and on `syncNow`), retrying by the contract's rules.
///
/// Concurrency is Dispatch only: a timer (a `ReliableTimer` unless a test hands it a
/// `VirtualScheduler`, docs/architecture.md) triggers cycles, and every cycle (the
/// timer's and `syncNow`'s) runs through one serial queue, so two cycles never overlap
/// and never send the same batch twice at once. The state between cycles (backoff,
/// breaker, token pause) sits behind a lock that is never held across a request.
public final class Uploader: Sendable {
    private let upload: UploadConfig
    private let tuning: UploadTuning
    private let queue: any UploadStore
    private let clock: any WallClock
    private let logger: Logger
    private let state: UploaderStateBox
    private let stopping: StopFlag
    private let context: UploadContext
    private let cycles = DispatchQueue(label: "ariata.upload.cycles")
    private let scheduler: any TimerScheduling
    private let timer = Mutex<(any ScheduledTimer)?>(nil)
    /// The power policy's say ([power]): the interval multiplied on battery, scheduled
    /// cycles postponed on a low battery. `sync` (the user asking) is never postponed.
    private let power = Mutex((factor: 1, postponed: false))
    /// Whether the connection is metered (NetworkManager, through the daemon): scheduled
    /// cycles then defer what `[upload] on_metered` says (docs/laptop.md#metered-networks).
    private let metered = MeteredFlag()
    private let suspend: Mutex<SuspendDetector>
    /// Taken for each scheduled cycle (the daemon's), so `ariata-agent sync` and the
    /// daemon never upload at the same time.
    private let uploadLock: FileLock?
    /// Run when an upload succeeds after an outage (`onRecovery`).
    private let recovery = RecoveryHandler()

    /// Holds `onRecovery`'s handler for the cycles.
    final class RecoveryHandler: Sendable {
        let handler = Mutex<(@Sendable () -> Void)?>(nil)
        func call() { handler.withLock { $0 }?() }
    }

    /// Set by `setMetered`, read by cycles.
    final class MeteredFlag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .relaxed) }
        /// Sets it; returns what it was.
        func exchange(_ metered: Bool) -> Bool { value.exchange(metered, ordering: .sequentiallyConsistent) }
    }

    /// Set by `stop()`, read by cycles and the transport's abort check.
    final class StopFlag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .relaxed) }
        func set(_ stopping: Bool) { value.store(stopping, ordering: .sequentiallyConsistent) }
    }

    /// - Parameters:
    ///   - queue: the record queue (`database.recordQueue`). What decides the next
    ///     attempt (backoff, breaker, token pause, 429 hold, refused streams) is read back
    ///     from it, so a restart does not hammer a failing server.
    ///   - clock: the time used for backoff, pauses and the body's `timestamp`;
    ///     a `ManualClock` makes schedules testable without sleeping.
    ///   - makeTransport: one transport per cycle; libcurl unless a test wraps it.
    ///   - random: jitter source, values in [0, 1).
    ///   - uploadLock: held during each scheduled cycle (the daemon passes
    ///     `FileLock.upload(databasePath:)`; `sync` takes that lock itself).
    ///   - scheduler: makes the cycle timer and gives the clocks a suspend is told by; a
    ///     test passes a `VirtualScheduler` (also as `clock`) to run intervals, backoff and
    ///     suspends without waiting.
    public init(server: ServerConfig, box: BoxConfig = BoxConfig(), upload: UploadConfig, queue: any UploadStore,
                clock: any WallClock = SystemClock(), logger: Logger = Logger(.upload),
                tuning: UploadTuning = UploadTuning(),
                makeTransport: @escaping HTTPTransportFactory = CurlTransport.factory,
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
                uploadLock: FileLock? = nil, scheduler: any TimerScheduling = DispatchScheduler()) {
        self.uploadLock = uploadLock
        self.scheduler = scheduler
        suspend = Mutex(SuspendDetector(clocks: scheduler))
        self.upload = upload
        self.tuning = tuning
        self.queue = queue
        self.clock = clock
        self.logger = logger
        let settings = Self.settings(server, box: box, queue: queue)
        let fingerprint = UploaderMemory.fingerprint(settings)
        let stored = try? queue.state(AgentStateKey.uploadMemory)
        let restored = UploaderMemory.restore(from: stored, server: fingerprint, tuning: tuning, now: clock.now())
        if let restored, !restored.isEmpty {
            logger.info("upload waits read back from the last run: \(Self.describe(restored, at: clock.now()))")
        }
        // A new process (or a reload) tries gzip again (a proxy may have been put in front);
        // what the last one saw stays for `status` until a gzip body is read.
        let plainNoted = (try? queue.state(AgentStateKey.uploadPlainBodiesSince)) != nil
        if plainNoted, !settings.gzip { try? queue.setState(AgentStateKey.uploadPlainBodiesSince, nil) }
        var initial = UploaderState(settings: settings, memory: restored ?? UploaderMemory(tuning: tuning, server: fingerprint),
                                    published: restored)
        initial.uncompressedNoted = plainNoted && settings.gzip
        state = UploaderStateBox(initial)
        if restored == nil, stored != nil {
            // Another server or token than the memory was about: its waits do not apply,
            // and `status` must not go on showing them.
            for key in [AgentStateKey.uploadMemory, AgentStateKey.uploadAuthPausedUntil, AgentStateKey.uploadRetryAt] {
                try? queue.setState(key, nil)
            }
        }
        let stopping = StopFlag()
        self.stopping = stopping
        let recovery = self.recovery
        let metered = self.metered
        context = UploadContext(upload: upload, tuning: tuning, queue: queue, clock: clock, logger: logger, state: state,
                                makeTransport: makeTransport, random: random, isStopping: { stopping.isSet },
                                recovered: { recovery.call() }, metered: { metered.isSet }, endpoint: server.endpoint)
    }

    /// The settings of `server` and `box`, with the ingest applet a box named after a 404
    /// (kept in the queue database) in place of the configured one.
    static func settings(_ server: ServerConfig, box: BoxConfig, queue: any UploadStore) -> ServerSettings {
        var box = box
        if box.isPaired, let kept = try? queue.state(AgentStateKey.boxApplet) {
            let words = kept.split(separator: " ").map(String.init)
            if words.count == 3, words[0] == box.nodeID, words[1] == box.pairing { box.appletID = words[2] }
        }
        return ServerSettings(server, box: box)
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
        stopping.set(false)
        let fresh = scheduler.makeTimer(label: "ariata.upload.timer") { [weak self] in self?.timerFired() }
        let old = timer.withLock { current -> (any ScheduledTimer)? in
            defer { current = fresh }
            return current
        }
        old?.stop()
        fresh.start(interval: interval, firstAfter: 0)
    }

    private var interval: TimeInterval { TimeInterval(upload.interval * power.withLock { $0.factor }) }

    /// Applies the power policy: a new interval counts from now; the end of a postponement
    /// (back on mains) runs a cycle at once, as the queue has waited.
    public func setPower(factor: Int, postponed: Bool) {
        let factor = max(1, factor)
        let old = power.withLock { p -> (factor: Int, postponed: Bool) in
            defer { p = (factor, postponed) }
            return p
        }
        guard old.factor != factor || old.postponed != postponed, let timer = timer.withLock({ $0 }) else { return }
        if old.postponed && !postponed {
            timer.start(interval: interval, firstAfter: 0)
        } else if old.factor != factor {
            timer.start(interval: interval, firstAfter: interval)
        }
    }

    /// The connection became metered, or unmetered. Back on an unmetered one, what
    /// `[upload] on_metered` deferred goes at once rather than at the next interval, like
    /// the network's return. Works before `start()` too (the daemon says it first).
    public func setMetered(_ metered: Bool) {
        let was = self.metered.exchange(metered)
        guard was != metered else { return }
        let deferred = MeteredUploadRule.deferred(onMetered: upload.onMetered, metered: true).map(\.rawValue).sorted()
        guard !deferred.isEmpty else { return }
        if metered {
            logger.notice("the connection is metered: \(deferred.joined(separator: ", ")) uploads wait for an unmetered one ([upload] on_metered = \"\(upload.onMetered.rawValue)\"); nothing is dropped")
        } else if let timer = timer.withLock({ $0 }) {
            logger.notice("the connection is no longer metered: uploading what waited now")
            timer.fireNow()
        }
    }

    /// Stops: aborts a request in flight (within about a second; one whose body was sent
    /// is given `CurlTransport.answerGrace` for its answer), lets the cycle finish
    /// its bookkeeping and returns when it has. Records not confirmed stay pending.
    /// Not to be called from a progress callback.
    public func stop() {
        stopping.set(true)
        let old = timer.withLock { current -> (any ScheduledTimer)? in
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
    public func updateServer(_ server: ServerConfig, box: BoxConfig) {
        let settings = Self.settings(server, box: box, queue: queue)
        let changed = state.with { s -> Bool in
            guard s.settings != settings else { return false }
            s.settings = settings
            s.uncompressed = false
            s.uncompressedNoted = false
            s.memory = UploaderMemory(tuning: tuning, server: UploaderMemory.fingerprint(settings))
            s.published = s.memory
            return true
        }
        guard changed else { return }
        for key in [AgentStateKey.uploadMemory, AgentStateKey.uploadAuthPausedUntil, AgentStateKey.uploadRetryAt,
                    AgentStateKey.uploadPlainBodiesSince] {
            try? queue.setState(key, nil)
        }
        timer.withLock { $0 }?.fireNow()
    }

    /// The network came back after an outage (a default route or an address appeared), or
    /// the machine resumed from suspend: the backoff and the breaker that the outage caused
    /// are forgotten and a cycle runs now. What the server itself asked for stays: a 429's
    /// wait, a `Retry-After`, the token pause, a refused stream.
    public func networkReturned(_ why: String) {
        let waited = state.with { s -> Bool in
            let waiting = s.memory.breaker.consecutiveFailures > 0 || s.memory.breaker.openUntil != nil
                || s.memory.retries.values.contains { !$0.serverAsked }
            s.forgetNetworkFailures(tuning: tuning)
            return waiting
        }
        guard waited else { return }
        logger.notice("\(why): backoff reset, uploading now")
        timer.withLock { $0 }?.fireNow()
    }

    /// A scheduled cycle now rather than at its time (the machine woke from sleep): what
    /// the network did before is forgotten as after a network return; a power hold or an
    /// auth pause still applies.
    public func cycleNow(_ why: String) {
        state.with { s in s.forgetNetworkFailures(tuning: tuning) }
        logger.notice("\(why): uploading now")
        timer.withLock { $0 }?.fireNow()
    }

    /// `handler` runs (on the cycle's thread) when the endpoint answers again after an
    /// outage: the daemon then asks the server for its stream switches.
    public func onRecovery(_ handler: @escaping @Sendable () -> Void) {
        recovery.handler.withLock { $0 = handler }
    }

    // MARK: Reading

    /// The uploader's liveness, for the supervisor.
    public func liveness() -> Liveness {
        let now = clock.now()
        return state.with { s in
            if let problem = s.settings.configurationProblem { return .unhealthy(reason: problem) }
            let memory = s.memory
            if memory.authPause.refusals > 0 {
                let until = memory.authPause.until.map { "; uploads paused until \(RFC3339.string(from: $0))" } ?? ""
                if s.settings.box != nil {
                    return .unhealthy(reason: "\(memory.lastFailure?.reason ?? "the box refused this device")\(until)", code: .invalidToken)
                }
                return .unhealthy(reason: "the server refused the device token\(until): \(AgentErrorCode.invalidToken.hint)",
                                  code: .invalidToken)
            }
            if let hold = memory.rateLimitWait, now < hold.until {
                return .unhealthy(reason: "\(hold.reason); no uploads until \(RFC3339.string(from: hold.until)): \(AgentErrorCode.rateLimited.hint)",
                                  code: .rateLimited)
            }
            if let (stream, pause) = memory.refusals.filter({ $0.value.refusals > 0 }).min(by: { $0.key < $1.key }) {
                let until = pause.until.map { "; \(stream) uploads try again at \(RFC3339.string(from: $0))" } ?? ""
                return .unhealthy(reason: "the server refuses every \(stream) record\(until): \(AgentErrorCode.streamRefused.hint)",
                                  code: .streamRefused)
            }
            let last = memory.lastFailure
            switch memory.breaker.state(at: now) {
            case .open(let until):
                return .unhealthy(reason: "the endpoint is failing (\(last?.reason ?? "no answer")); next try at \(RFC3339.string(from: until))",
                                  code: last?.code)
            case .halfOpen:
                return .unhealthy(reason: "the endpoint is failing (\(last?.reason ?? "no answer")); probing it", code: last?.code)
            case .closed:
                break
            }
            if let (stream, retry) = memory.retries.filter({ $0.value.failures > 0 }).min(by: { $0.key < $1.key }) {
                let at = retry.nextAttemptAt.map { "; retrying at \(RFC3339.string(from: $0))" } ?? ""
                return .unhealthy(reason: "\(stream): \(retry.reason ?? "upload failed")\(at)", code: retry.code)
            }
            return .healthy
        }
    }

    /// When things may next try (tests read backoff from here instead of sleeping).
    public func schedule() -> UploadSchedule {
        let now = clock.now()
        return state.with { s in
            let memory = s.memory
            func byStream<T>(_ values: [String: T]) -> [StreamName: T] {
                Dictionary(uniqueKeysWithValues: values.compactMap { key, value in StreamName(rawValue: key).map { ($0, value) } })
            }
            let waiting = byStream(memory.retries.filter { $0.value.failures > 0 })
            return UploadSchedule(breaker: memory.breaker.state(at: now), breakerTrips: memory.breaker.trips,
                                  authPausedUntil: memory.authPause.isPaused(at: now) ? memory.authPause.until : nil,
                                  rateLimitedUntil: memory.rateLimitWait.flatMap { now < $0.until ? $0.until : nil },
                                  streamRefusedUntil: byStream(memory.refusals.compactMapValues { $0.isPaused(at: now) ? $0.until : nil }),
                                  streamRetryAt: waiting.compactMapValues(\.nextAttemptAt),
                                  streamFailures: waiting.mapValues(\.failures))
        }
    }

    /// The wall-clock time of the next timer run, nil when not started.
    public var nextCycleAt: Date? { timer.withLock { $0?.nextFireDate } }

    // MARK: Internals

    private func cycle(forced: Bool, progress: ((SyncProgress) -> Void)?) -> SyncReport {
        var cycle = UploadCycle(forced: forced, context: context, progress: progress)
        return cycle.run()
    }

    /// One line for the log: what waits were read back after a restart.
    private static func describe(_ memory: UploaderMemory, at now: Date) -> String {
        var parts: [String] = []
        if memory.authPause.isPaused(at: now), let until = memory.authPause.until {
            parts.append("token pause (E002) until \(RFC3339.string(from: until))")
        }
        if let hold = memory.rateLimitWait, now < hold.until { parts.append("429 wait until \(RFC3339.string(from: hold.until))") }
        if case .open(let until) = memory.breaker.state(at: now) { parts.append("endpoint backoff until \(RFC3339.string(from: until))") }
        for (stream, retry) in memory.retries.sorted(by: { $0.key < $1.key }) {
            if let next = retry.nextAttemptAt, next > now { parts.append("\(stream) retry at \(RFC3339.string(from: next))") }
        }
        for (stream, pause) in memory.refusals.sorted(by: { $0.key < $1.key }) where pause.isPaused(at: now) {
            parts.append("\(stream) refused by the server (E007) until \(pause.until.map(RFC3339.string(from:)) ?? "?")")
        }
        return parts.isEmpty ? "\(memory.breaker.consecutiveFailures) failures in a row, nothing to wait for now" : parts.joined(separator: ", ")
    }

    private func timerFired() {
        // A Dispatch wall-clock timer fires once on resume from suspend; the boot-time
        // clock, which counts the suspension, tells that this is such a fire.
        if let slept = suspend.withLock({ $0.suspendedSinceLastCheck() }), slept > 2 {
            networkReturned("resumed after \(Int(slept)) s of suspend")
        }
        if power.withLock({ $0.postponed }) {
            logger.debug("upload cycle skipped: the battery is low, uploads wait for mains ([power] low_battery_percent)")
            return
        }
        // One upload at a time across processes: while `ariata-agent sync` holds the lock,
        // this cycle is skipped (sync is sending the same records right now).
        var held: FileLock.Acquired?
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
        guard !stopping.isSet, let timer = timer.withLock({ $0 }) else { return }
        let now = clock.now()
        let due: Date? = state.with { s in
            if let wait = s.endpointWait(at: now) { return wait.until }
            return StreamName.allCases.compactMap { s.streamWait($0, at: now) }.min()
        }
        guard let due else { return }
        let wait = max(due.timeIntervalSince(now), 1)
        if wait < interval { timer.reschedule(after: wait) }
    }
}
