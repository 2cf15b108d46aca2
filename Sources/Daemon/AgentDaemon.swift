import AgentCore
import Foundation
import Logging
import Platform
import Synchronization
import Upload

/// What the daemon needs of the uploader.
public protocol UploadComponent: AnyObject, Sendable {
    func start()
    func stop()
    func liveness() -> Liveness
    func updateServer(_ server: ServerConfig)
    /// The network came back after an outage: forget the backoff it caused, send now.
    func networkReturned(_ why: String)
    /// The power policy: upload interval multiplied by `factor`; scheduled uploads held.
    func setPower(factor: Int, held: Bool)
    /// `handler` runs when an upload succeeds after an outage (the daemon asks the server
    /// for its stream switches then).
    func onRecovery(_ handler: @escaping @Sendable () -> Void)
}

extension UploadComponent {
    public func onRecovery(_ handler: @escaping @Sendable () -> Void) {}
}

/// Builds the parts the daemon runs; the live one wires the real streams and uploader,
/// tests may wire the same real parts differently (another gpsd port, say).
public protocol ComponentFactory: Sendable {
    /// A new capture stream for `stream` (the daemon asks only for enabled streams).
    func makeStream(_ stream: StreamName, config: AgentConfig, database: AgentDatabase, logger: Logger) -> any CaptureStream
    func makeUploader(config: AgentConfig, database: AgentDatabase, logger: Logger) -> any UploadComponent
}

/// The running agent: the enabled streams, the uploader, and the one maintenance timer
/// (supervisor, pause switches, retention and the storage guard). Data moves one
/// way: streams write to the queue, the uploader reads from it; they never meet.
public final class AgentDaemon: Sendable {
    public let database: AgentDatabase
    private let factory: any ComponentFactory
    private let notifier: SystemdNotifier
    private let logger: Logger
    private let clock: any WallClock
    private let state: Mutex<State>
    private let supervisor: Supervisor
    private let tickInterval: TimeInterval
    /// Makes the daemon's timers: Dispatch's (`ReliableTimer`) unless a test drives time.
    private let scheduler: any TimerScheduling
    private let maintenance: Mutex<(any ScheduledTimer)?> = Mutex(nil)
    /// Fires when the earliest timed pause ends, so capture resumes on time rather than
    /// at the next liveness check (a wall-clock deadline: it fires on waking from suspend).
    private let pauseEnd: Mutex<(any ScheduledTimer)?> = Mutex(nil)
    /// Fires when the oldest capture waiting for its fsync reaches `[storage] sync_seconds`
    /// before the next liveness check would (armed by the check; see `armCommitSync`).
    private let commitSyncDeadline: Mutex<(any ScheduledTimer)?> = Mutex(nil)
    private let network: Mutex<NetworkWatcher?> = Mutex(nil)
    private let storageGuard: StorageGuard
    private let storageKick: StorageGuardKick
    private let clockCorrection: ClockCorrection
    private let metrics = MetricsTextfile(logger: Logger(.metrics))
    private let power: PowerGovernor
    /// The server's stream switches (`POST /api/devices/verify`), kept in the database.
    private let serverSwitches: Mutex<ServerSwitchKeeper?> = Mutex(nil)

    private struct State {
        var config: AgentConfig
        var supervisors: [StreamName: StreamSupervisor] = [:]
        var uploader: (any UploadComponent)?
        var lastRetention: Date?
        /// Maintenance rounds run since the start.
        var ticks = 0
    }

    /// - Parameters:
    ///   - tickInterval: the supervisor's period (30 s; tests use less).
    ///   - scheduler: makes the maintenance, pause-end, commit-sync and storage-kick
    ///     timers and gives the supervisor's monotonic clock; a test passes a
    ///     `VirtualScheduler` (also as `clock`) and moves time itself.
    public init(config: AgentConfig, database: AgentDatabase, factory: any ComponentFactory,
                notifier: SystemdNotifier = SystemdNotifier(), clock: any WallClock = SystemClock(),
                scheduler: any TimerScheduling = DispatchScheduler(),
                tickInterval: TimeInterval = 30, logger: Logger) {
        self.database = database
        self.scheduler = scheduler
        self.factory = factory
        self.notifier = notifier
        self.clock = clock
        self.logger = logger
        self.tickInterval = tickInterval
        state = Mutex(State(config: config))
        database.commitSync.window = TimeInterval(config.storage.syncSeconds)
        // An unchanged health is stored again every 10 checks (5 min by default).
        supervisor = Supervisor(components: [], store: database, notifier: notifier,
                                 livenessRewrite: 10 * tickInterval, clock: scheduler.monotonicSeconds,
                                 logger: Logger(.supervisor))
        storageGuard = StorageGuard(database: database, limits: config.storage.limits, clock: clock, logger: Logger(.storage))
        storageKick = StorageGuardKick(storageGuard, scheduler: scheduler)
        clockCorrection = ClockCorrection(database: database, clock: clock, logger: Logger(.time))
        power = PowerGovernor(database: database, logger: Logger(.power))
        // A capture refused for lack of space asks for a pass at once rather than at the
        // next tick; the pass is coalesced and runs off the capture thread.
        let kick = storageKick
        database.storagePressure.onRaise { kick.request() }
        let keeper = ServerSwitchKeeper(server: config.server, database: database, clock: clock, scheduler: scheduler,
                                        logger: Logger(.switches)) { [weak self] old, new in
            self?.serverSwitchesChanged(from: old, to: new)
        }
        serverSwitches.withLock { $0 = keeper }
    }

    private var switchKeeper: ServerSwitchKeeper? { serverSwitches.withLock { $0 } }

    /// The configuration the streams run with: the file's, with what the server's last
    /// answer sets and the file leaves open (docs/upload.md#the-servers-stream-switches).
    private func streamConfig() -> AgentConfig {
        let config = state.withLock { $0.config }
        return switchKeeper?.current?.applied(to: config) ?? config
    }

    /// Streams on in the file that the server switched off (the file is a veto, not this).
    private func serverSwitchedOff() -> Set<StreamName> {
        switchKeeper?.current?.switchedOffStreams ?? []
    }

    /// A new answer from the server: streams whose settings it changed are restarted with
    /// them (a paused one starts with them when it resumes), and the switches are applied
    /// now, so a stream switched off stops within seconds of the answer.
    private func serverSwitchesChanged(from old: ServerSwitches?, to new: ServerSwitches) {
        let supervisors = state.withLock { $0.supervisors }
        let file = state.withLock { $0.config }
        let before = old?.applied(to: file) ?? file
        let after = new.applied(to: file)
        if before.location != after.location { supervisors[.location]?.restart() }
        if before.health.serverMetrics != after.health.serverMetrics { supervisors[.health]?.restart() }
        applyPauseSwitches()
    }

    /// Starts every enabled stream (unless paused) and the uploader; returns at once.
    public func start() {
        // Room first: after a restart on a full disk, the queue's opening handed the
        // reserve back, and that space is the guard's to delete with, not the streams'.
        // Attachment files a crash left without a record go first (no capture is running
        // yet, so no file is between its placing and its record's commit).
        do {
            try database.housekeeping.sweepAttachments()
        } catch {
            logger.error("cannot sweep the attachment directory: \(error)")
        }
        storageGuard.pass()
        // What an earlier process of this boot learnt of the true time, before any capture
        // checks a time against it.
        clockCorrection.loadEvidence()
        let config = state.withLock { $0.config }
        // The switches kept for this configuration's server apply from the first moment.
        switchKeeper?.use(config.server)
        let switches = PauseSwitches(database: database)
        let now = clock.now()
        _ = try? switches.clearEnded(at: now)
        power.pass(config: config, uploader: nil)
        var paused = (try? switches.pausedStreams(at: now)) ?? []
        if power.policy?.microphonePaused == true { paused.insert(.microphone) }
        // The server's last answer holds until the next: a restart without network keeps it.
        let switchedOff = serverSwitchedOff()
        paused.formUnion(switchedOff)
        var supervisors: [StreamName: StreamSupervisor] = [:]
        for stream in StreamName.allCases where config.isEnabled(stream) {
            let factory = self.factory, database = self.database
            let streamLogger = Logger(.stream(stream))
            // Each start reads the settings then in force, the server's latest included.
            let supervisor = StreamSupervisor(stream: stream, paused: paused.contains(stream), logger: logger) { [weak self] in
                factory.makeStream(stream, config: self?.streamConfig() ?? config, database: database, logger: streamLogger)
            }
            supervisors[stream] = supervisor
        }
        let uploader = factory.makeUploader(config: config, database: database, logger: Logger(.upload))
        state.withLock { s in
            s.supervisors = supervisors
            s.uploader = uploader
        }
        for stream in StreamName.allCases {
            supervisors[stream]?.start()
            let word = supervisors[stream] == nil ? "disabled"
                : switchedOff.contains(stream) ? "switched off by the server" : paused.contains(stream) ? "paused" : "started"
            logger.info("\(stream.rawValue) \(word)")
        }
        if let policy = power.policy { uploader.setPower(factor: policy.uploadFactor, held: policy.uploadsHeld) }
        let keeper = switchKeeper
        uploader.onRecovery { keeper?.askSoon("uploads work again after an outage") }
        uploader.start()
        keeper?.start(server: config.server)
        let watcher = NetworkWatcher(logger: Logger(.network)) { [weak uploader] what in
            uploader?.networkReturned(what)
        }
        network.withLock { $0 = watcher }
        watcher.start()
        supervisor.replaceComponents(StreamName.allCases.compactMap { supervisors[$0] } + [UploaderSupervision(uploader)])

        let timer = scheduler.makeTimer(label: "ariata.maintenance") { [weak self] in self?.tick() }
        maintenance.withLock { $0 = timer }
        pauseEnd.withLock { $0 = scheduler.makeTimer(label: "ariata.pause-end") { [weak self] in self?.applyPauseSwitches() } }
        commitSyncDeadline.withLock {
            $0 = scheduler.makeTimer(label: "ariata.commit-sync") { [weak self] in self?.commitSyncDeadlineReached() }
        }
        armPauseEnd()
        timer.start(interval: tickInterval, firstAfter: min(tickInterval, 5))
        notifier.ready(status: "capturing " + (supervisors.keys.sorted().map(\.rawValue).joined(separator: ", ")))
    }

    /// Stops capture (the audio chunk in progress is finished and written), then the
    /// uploader (a request in flight is aborted; its records stay pending), then corrects
    /// what it can of the records held meanwhile (the streams' last ones), so they need
    /// no other process to go out.
    public func stop() {
        notifier.stopping()
        maintenance.withLock { $0 }?.stop()
        pauseEnd.withLock { current -> (any ScheduledTimer)? in
            defer { current = nil }
            return current
        }?.stop()
        commitSyncDeadline.withLock { current -> (any ScheduledTimer)? in
            defer { current = nil }
            return current
        }?.stop()
        storageKick.stop()
        switchKeeper?.stop()
        network.withLock { current -> NetworkWatcher? in
            defer { current = nil }
            return current
        }?.stop()
        let (supervisors, uploader) = state.withLock { ($0.supervisors, $0.uploader) }
        for supervisor in supervisors.values { supervisor.stop() }
        uploader?.stop()
        clockCorrection.pass(trustSystemClock: state.withLock { $0.config.daemon.trustSystemClock })
        // Captures that wait for their fsync do not outlive the daemon unsynced.
        database.syncWaitingCaptures()
        logger.info("stopped: streams and uploader are down, the queue is closed cleanly")
    }

    /// Applies a new configuration: everything is stopped and started again with it.
    public func reload(_ config: AgentConfig) {
        notifier.reloading()
        logger.notice("reloading the configuration from \(config.file)")
        stop()
        state.withLock { $0.config = config }
        database.commitSync.window = TimeInterval(config.storage.syncSeconds)
        storageGuard.update(config.storage.limits)
        storageKick.resume()
        start()
    }

    /// Reads the pause switches (written by `ariata-agent pause/resume`) and applies them:
    /// timed pauses that have ended are cleared and their streams resumed, and the
    /// pause-end timer is set for the next end.
    public func applyPauseSwitches() {
        let pauses = PauseSwitches(database: database)
        let now = clock.now()
        do {
            for stream in try pauses.clearEnded(at: now) {
                logger.notice("\(stream.rawValue): the timed pause has ended")
            }
        } catch {
            // They read as not paused all the same; clearing is tidiness, retried next time.
            logger.warning("cannot clear ended pauses: \(error); retrying at the next liveness check")
        }
        guard let paused = try? pauses.pausedStreams(at: now) else { return }
        let powerPausesMicrophone = power.policy?.microphonePaused == true
        let switches = switchKeeper?.current
        let supervisors = state.withLock { $0.supervisors }
        for (stream, supervisor) in supervisors {
            let serverReason = paused.contains(stream) ? nil : switches?.offReason(stream)
            let byServer = serverReason != nil
            let byPower = stream == .microphone && powerPausesMicrophone && !paused.contains(stream) && !byServer
            let why = serverReason ?? (byPower ? "the battery is low ([power] low_battery_percent); it resumes on mains" : nil)
            supervisor.setPaused(paused.contains(stream) || byPower || byServer, until: try? pauses.pausedUntil(stream, at: now),
                                 why: why)
        }
        armPauseEnd()
    }

    /// Sets the pause-end timer for the earliest end of a timed pause, or idles it.
    private func armPauseEnd() {
        guard let timer = pauseEnd.withLock({ $0 }) else { return }
        guard let next = try? PauseSwitches(database: database).nextEnd(after: clock.now()) else {
            timer.stop()
            return
        }
        // A day's interval only matters if the end is missed; each run re-arms it.
        if timer.isRunning {
            timer.reschedule(at: next)
        } else {
            timer.start(interval: 86_400, firstAfter: next.timeIntervalSince(clock.now()))
        }
    }

    /// A capture waits for its fsync at most `[storage] sync_seconds`. What would wait
    /// longer than that before the next check is synced at the end of its window, not now:
    /// while the microphone runs, a chunk's commit (every 28 s, always fsynced) takes the
    /// waiting captures first, and the deadline finds nothing left to sync. Syncing at the
    /// check instead cost an fsync every check, each rewriting the WAL's last page
    /// (docs/decisions/0004-fsync-window.md). A capture committed after this check is the next check's.
    private func armCommitSync() {
        guard let waited = database.commitSync.oldestWait else { return }
        let left = database.commitSync.window - waited
        guard left < tickInterval else { return }
        guard left > Self.commitSyncSlack, let timer = commitSyncDeadline.withLock({ $0 }) else {
            database.syncWaitingCaptures()
            return
        }
        timer.runOnce(after: left)
    }

    /// How early a deadline may sync (the timer's leeway and the clocks' difference).
    private static let commitSyncSlack: TimeInterval = 0.5

    /// The deadline armed by a check: syncs when the capture it was armed for still waits
    /// (one that a later fsync took leaves a younger one, the next check's to arm).
    private func commitSyncDeadlineReached() {
        database.syncWaitingCaptures(waitedAtLeast: database.commitSync.window - Self.commitSyncSlack)
    }

    /// Memory freed since the last check (an upload's bodies) goes back to the system. At
    /// the second check (35 s in: the streams capturing, the first chunk written) the
    /// program's and libraries' pages are dropped once more, as at the start: what only
    /// the start ran (configuration, the queue's opening, the streams' set-up) leaves the
    /// resident set, and what the daemon runs from then on comes back (docs/decisions/0005-start-up-page-drop.md).
    private func trimMemory(round: Int) {
        MemoryFootprint.releaseFreedMemory()
        if round == 2 { MemoryFootprint.dropMappedFilePages() }
    }

    /// One maintenance round: the storage guard, pause switches, health (with restarts
    /// and the watchdog), and retention once an hour. The guard goes first, because on a
    /// full disk everything after it writes to the queue; each part runs whatever the
    /// others did, and none of them throws, so a failing disk cannot stop the tick.
    @discardableResult
    public func tick() -> [String: Liveness] {
        trimMemory(round: state.withLock { $0.ticks += 1; return $0.ticks })
        armCommitSync()
        storageGuard.pass()
        let (config, uploader) = state.withLock { ($0.config, $0.uploader) }
        power.pass(config: config, uploader: uploader)
        applyPauseSwitches()
        clockCorrection.pass(trustSystemClock: config.daemon.trustSystemClock)
        let results = supervisor.tick()
        // After the supervisor, so the file carries this tick's health.
        metrics.write(config: config)
        let due = state.withLock { s -> Bool in
            let now = clock.now()
            guard (s.lastRetention.map { now.timeIntervalSince($0) >= 3_600 } ?? true) else { return false }
            s.lastRetention = now
            return true
        }
        if due {
            do {
                let deleted = try database.housekeeping.applyRetention(config.storage.retention)
                if deleted > 0 { logger.info("retention deleted \(deleted) uploaded or failed records") }
            } catch {
                logger.error("retention failed: \(error); it runs again at the next liveness check")
                state.withLock { $0.lastRetention = nil }
            }
        }
        return results
    }
}

/// The uploader as the supervisor sees it: its health is stored for `status`, but it is
/// never restarted, because it recovers by itself and a restart would skip its backoff.
final class UploaderSupervision: SupervisedComponent, Sendable {
    let uploader: any UploadComponent
    init(_ uploader: any UploadComponent) { self.uploader = uploader }
    var componentName: String { "uploader" }
    func liveness() -> Liveness { uploader.liveness() }
    func restart() {}
}
