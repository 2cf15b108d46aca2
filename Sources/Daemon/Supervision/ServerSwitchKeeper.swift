import AgentCore
import Foundation
import Platform
import Logging
import Synchronization
import Upload

/// Keeps the server's stream switches: asks `POST /api/devices/verify` before the streams
/// start (the daemon's start and every reload), every hour (every minute while the person has not
/// switched any stream on yet), and when asked (the first upload that succeeds after an
/// outage); keeps the last answer in the database, so a restart without
/// network starts from it; and tells the daemon when it changed
/// (docs/upload.md#the-servers-stream-switches).
final class ServerSwitchKeeper: Sendable {
    /// How often the switches are asked for while the daemon runs.
    static let interval: TimeInterval = 3_600
    /// How often while the server has no stream switched on for this device yet (right
    /// after pairing): capture starts within a minute of the person switching one on.
    static let waitingInterval: TimeInterval = 60
    /// How long the start waits for the first answer before its streams start on the
    /// switches kept from the last one (a server that does not answer, no network).
    static let startWait: TimeInterval = 2

    private let database: AgentDatabase
    private let clock: any WallClock
    private let scheduler: any TimerScheduling
    private let logger: Logger
    private let makeTransport: HTTPTransportFactory
    /// Called with the switches before and after an answer that changed them.
    private let changed: @Sendable (ServerSwitches?, ServerSwitches) -> Void
    private let state: Mutex<State>
    private let cancelled = Atomic<Bool>(false)

    private struct State {
        var current: ServerSwitches?
        var server = ServerConfig()
        var timer: (any ScheduledTimer)?
        /// What the last ask came to, so a problem that lasts is logged once.
        var lastOutcome: String?
        /// The start asked already (`askBeforeCapture`): `start` waits an interval.
        var askedBeforeStart = false
    }

    init(server: ServerConfig, database: AgentDatabase, clock: any WallClock, scheduler: any TimerScheduling, logger: Logger,
         makeTransport: @escaping HTTPTransportFactory = CurlTransport.factory,
         changed: @escaping @Sendable (ServerSwitches?, ServerSwitches) -> Void) {
        self.database = database
        self.clock = clock
        self.scheduler = scheduler
        self.logger = logger
        self.makeTransport = makeTransport
        self.changed = changed
        state = Mutex(State(current: ServerSwitches.load(from: database, endpoint: server.endpoint), server: server))
    }

    /// The switches in force: the last answer, read back from the database at start.
    var current: ServerSwitches? { state.withLock { $0.current } }

    private var isStopped: Bool { cancelled.load(ordering: .relaxed) }

    /// The server to ask from now on (a reload's): the switches kept for it apply, none
    /// when it is another server than the one that answered last.
    func use(_ server: ServerConfig) {
        let kept = ServerSwitches.load(from: database, endpoint: server.endpoint)
        state.withLock { s in
            if s.server.endpoint != server.endpoint { s.current = kept }
            s.server = server
        }
    }

    /// Before the streams start: asks, and waits for the answer at most `within` seconds,
    /// so that a stream switched off while the daemon was down does not start at all. An
    /// answer that comes later applies when it comes. Returns whether it came in time.
    @discardableResult
    func askBeforeCapture(server: ServerConfig, within wait: TimeInterval = ServerSwitchKeeper.startWait) -> Bool {
        use(server)
        cancelled.store(false, ordering: .sequentiallyConsistent)
        guard server.isOnboarded else { return false }
        let answered = DispatchSemaphore(value: 0)
        // A thread of its own, not a Dispatch queue: the global queues' worker pool would
        // wake the daemon every second from then on (docs/decisions/0006-main-thread-executor.md).
        do {
            _ = try NamedThread(name: "ariata-switches") { [self] _ in
                ask()
                answered.signal()
            }
        } catch {
            logger.warning("cannot ask the server for its stream switches before the streams start (no thread: \(error)); asking as they start")
            return false
        }
        state.withLock { $0.askedBeforeStart = true }
        return answered.wait(timeout: .now() + wait) == .success
    }

    /// Asks now (without waiting for the answer) unless the start asked already, then
    /// every hour.
    func start(server: ServerConfig) {
        use(server)
        cancelled.store(false, ordering: .sequentiallyConsistent)
        let timer = scheduler.makeTimer(label: "ariata.server-switches") { [weak self] in self?.ask() }
        let (old, askedBeforeStart, current) = state.withLock { s in
            defer { s.timer = timer; s.askedBeforeStart = false }
            return (s.timer, s.askedBeforeStart, s.current)
        }
        old?.stop()
        guard server.isOnboarded else {
            logger.info("not asking the server for its stream switches: no endpoint or token configured (a Virtues box takes no token and has no switches: the configuration alone decides)")
            return
        }
        // An answer still on its way when the start stopped waiting reschedules the timer
        // itself when it says nothing is switched on yet (`handle`).
        let waiting = current.map { $0.decides && !$0.isConfigurationComplete } ?? false
        timer.start(interval: Self.interval, firstAfter: askedBeforeStart ? (waiting ? Self.waitingInterval : Self.interval) : 0)
    }

    /// Aborts a request in flight and stops asking.
    func stop() {
        cancelled.store(true, ordering: .sequentiallyConsistent)
        state.withLock { s -> (any ScheduledTimer)? in
            defer { s.timer = nil }
            return s.timer
        }?.stop()
    }

    /// Asks at once (the uploads came back after an outage).
    func askSoon(_ why: String) {
        guard let timer = state.withLock({ $0.timer }) else { return }
        logger.info("\(why): asking the server for its stream switches")
        timer.fireNow()
    }

    /// One ask and what follows from its answer; the server's identity is refreshed with it.
    func ask() {
        let server = state.withLock { $0.server }
        let outcome = StreamSwitchClient(server: server, makeTransport: makeTransport)
            .fetch(now: clock.now(), isCancelled: { [weak self] in self?.isStopped ?? true })
        handle(outcome)
        refreshIdentity(server)
    }

    /// `GET /health`: which server generation and build this is, kept for `status`
    /// (docs/install.md, "Which server"). A failure keeps the last identity.
    private func refreshIdentity(_ server: ServerConfig) {
        guard !isStopped else { return }
        switch ServerIdentityClient(server: server).fetch(now: clock.now(), isCancelled: { [weak self] in self?.isStopped ?? true }) {
        case .identified(var identity):
            identity.endpoint = server.endpoint
            let previous = ServerIdentity.load(from: database, endpoint: server.endpoint)
            let level: Logger.Level = previous.map { $0.name != identity.name } ?? true ? .info : .debug
            logger.log(level: level, "the server is \(identity.name)")
            do {
                try identity.save(to: database)
            } catch {
                logger.error("cannot keep the server's identity in the database: \(error)")
            }
        case .failed(let reason):
            logger.debug("cannot read the server's identity (\(ServerIdentityClient.path)): \(reason)")
        }
    }

    func handle(_ outcome: StreamSwitchClient.Outcome) {
        let now = clock.now()
        let (server, kept) = state.withLock { ($0.server, $0.current ?? ServerSwitches()) }
        var next: ServerSwitches
        let said: String
        switch outcome {
        case .switches(let answer):
            next = answer
            let off = answer.switchedOffStreams.map(\.rawValue).sorted()
            if !answer.isConfigurationComplete {
                said = "\(ServerSwitches.notConfiguredReason): nothing is captured until then (asking every minute)"
                log(said, level: .notice)
            } else {
                said = "the server's stream switches: " + (off.isEmpty ? "every stream on" : "\(off.joined(separator: ", ")) switched off")
                log(said, level: .info)
            }
        case .noSwitches(let status):
            next = ServerSwitches(fetchedAt: now, supported: false)
            said = "the server has no stream switches (HTTP \(status) from \(StreamSwitchClient.path), a Virtues server): the local configuration alone decides which streams run"
            log(said, level: .notice)
        case .unauthorized(let reason):
            next = kept
            next.lastProblem = "\(AgentErrorCode.invalidToken.rawValue) \(reason)"
            said = "cannot read the server's stream switches: \(next.lastProblem ?? reason); the last switches stay in force"
            log(said, level: .error)
        case .failed(let reason, let code):
            if isStopped { return }
            next = kept
            next.lastProblem = (code.map { "\($0.rawValue) " } ?? "") + reason
            said = "cannot read the server's stream switches: \(next.lastProblem ?? reason); the last switches stay in force, asking again within "
                + (next.isConfigurationComplete ? "the hour" : "a minute")
            log(said, level: .warning)
        }
        next.endpoint = server.endpoint
        next.lastAttemptAt = now
        let previous = state.withLock { s -> ServerSwitches? in
            defer { s.current = next; s.lastOutcome = said }
            return s.current
        }
        do {
            try next.save(to: database)
        } catch {
            logger.error("cannot keep the server's stream switches in the database: \(error); they apply until the daemon stops")
        }
        if next.decides && !next.isConfigurationComplete {
            state.withLock { $0.timer }?.reschedule(after: Self.waitingInterval)
        }
        if previous?.decisions != next.decisions { changed(previous, next) }
    }

    /// Says `message` when it differs from what the last ask said: a server without
    /// switches is told once, a lasting outage once, not every hour.
    private func log(_ message: String, level: Logger.Level) {
        let repeated = state.withLock { $0.lastOutcome == message }
        logger.log(level: repeated ? .debug : level, "\(message)")
    }
}
