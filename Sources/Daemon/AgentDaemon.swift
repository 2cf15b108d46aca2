import AgentCore
import Foundation
import Logging
import Platform
import Synchronization
import Upload

/// The running agent: wires the enabled streams, the uploader and the parts that keep
/// them going, and starts and stops them in order. Each job is a part of its own:
/// `StreamControl` (which streams capture: pauses, the server's switches, power),
/// `MaintenanceRound` (the maintenance round on its timer), `CommitSyncDeadline`,
/// the storage guard and its kick, the network watch, the sleep watch, the metered watch
/// (`MeteredUploads`) and the desktop notices. Data moves one way: streams write to
/// the queue, the uploader reads from it; they never meet (docs/architecture.md).
public final class AgentDaemon: Sendable {
    public let database: AgentDatabase
    private let factory: any ComponentFactory
    private let notifier: SystemdNotifier
    private let logger: Logger
    private let supervisor: Supervisor
    private let storageGuard: StorageGuard
    private let storageKick: StorageGuardKick
    private let clockCorrection: ClockCorrection
    private let control: StreamControl
    private let commitSync: CommitSyncDeadline
    private let maintenance: MaintenanceRound
    private let metered: MeteredUploads
    private let coverage: CoverageRecorder
    private let state: Mutex<State>

    private struct State {
        var config: AgentConfig
        var supervisors: [StreamName: StreamSupervisor] = [:]
        var uploader: (any UploadComponent)?
        var network: NetworkWatcher?
        var sleep: SleepWatch?
    }

    /// - Parameters:
    ///   - roundInterval: the maintenance round's period (`[daemon] check_interval`; tests use less).
    ///   - timeZone: the quiet hours' (`[[microphone.quiet]]`); a test passes one.
    ///   - scheduler: makes the maintenance, pause-end, commit-sync and storage-kick
    ///     timers and gives the supervisor's monotonic clock; a test passes a
    ///     `VirtualScheduler` (also as `clock`) and moves time itself.
    ///   - trimsMemory: the rounds' page drop and memory hand-back; a test that runs the
    ///     daemon in its own process turns it off: there it would drop the test runner's
    ///     code and read it back at every round (the memory tests run the real program).
    public init(config: AgentConfig, database: AgentDatabase, factory: any ComponentFactory,
                notifier: SystemdNotifier = SystemdNotifier(), clock: any WallClock = SystemClock(),
                scheduler: any TimerScheduling = DispatchScheduler(),
                roundInterval: TimeInterval = 30, timeZone: TimeZone = .current, trimsMemory: Bool = true,
                logger: Logger) {
        self.database = database
        self.factory = factory
        self.notifier = notifier
        self.logger = logger
        state = Mutex(State(config: config))
        database.commitSync.window = TimeInterval(config.storage.syncSeconds)
        // An unchanged liveness is stored again every 10 rounds.
        supervisor = Supervisor(components: [], database: database, notifier: notifier,
                                livenessRewrite: 10 * roundInterval, clock: scheduler.monotonicSeconds,
                                logger: Logger(.supervisor))
        storageGuard = StorageGuard(database: database, limits: config.storage.limits, clock: clock, logger: Logger(.storage))
        storageKick = StorageGuardKick(storageGuard, scheduler: scheduler)
        clockCorrection = ClockCorrection(database: database, clock: clock, logger: Logger(.time))
        control = StreamControl(config: config, database: database, clock: clock, scheduler: scheduler,
                                power: PowerGovernor(database: database, logger: Logger(.power)), timeZone: timeZone, logger: logger)
        commitSync = CommitSyncDeadline(database: database, scheduler: scheduler, roundInterval: roundInterval)
        metered = MeteredUploads(database: database, clock: clock, logger: Logger(.network))
        coverage = CoverageRecorder(database: database, clock: clock, logger: logger)
        let notices = DesktopNotices(sink: factory.makeNoticeSink(logger: Logger(.notify)), logger: Logger(.notify))
        maintenance = MaintenanceRound(.init(database: database, supervisor: supervisor, storageGuard: storageGuard,
                                             commitSync: commitSync, control: control, clockCorrection: clockCorrection,
                                             metrics: MetricsTextfile(logger: Logger(.metrics)), notices: notices,
                                             trimsMemory: trimsMemory),
                                       config: config, clock: clock, scheduler: scheduler, interval: roundInterval, logger: logger)
        // A capture refused for lack of space asks for a pass at once rather than at the
        // next round; the pass is coalesced and runs off the capture thread.
        let kick = storageKick
        database.storagePressure.onRaise { kick.request() }
    }

    /// Starts every enabled stream (unless paused or switched off) and the uploader; returns at once.
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
        // The server's switches before any capture; then a start-up stage ends, and the
        // first TLS handshake's pages leave before the streams start
        // (docs/decisions/0005-start-up-page-drop.md).
        control.askServerBeforeCapture()
        MemoryFootprint.dropMappedFilePages()
        let stopped = control.prepare()
        // What the last process left open in the ledger, before the streams report.
        coverage.closeAfterStart()
        let supervisors = StreamSupervisor.forEnabledStreams(of: config, stopped: stopped, factory: factory, control: control,
                                                             coverage: coverage, database: database, logger: logger)
        control.attach(supervisors)
        let uploader = factory.makeUploader(config: config, database: database, logger: Logger(.upload))
        // A start-up stage ends (docs/decisions/0005-start-up-page-drop.md): the streams and
        // the first upload cycle start on a resident set without the queue's opening in it.
        MemoryFootprint.dropMappedFilePages()
        let watcher = NetworkWatcher(logger: Logger(.network)) { [weak uploader] what in uploader?.networkReturned(what) }
        let sleep = SleepWatch.holding(Array(supervisors.values), database: database, uploader: uploader, logger: Logger(.sleep))
        state.withLock { s in
            s.supervisors = supervisors
            s.uploader = uploader
            s.network = watcher
            s.sleep = sleep
        }
        for stream in StreamName.allCases {
            supervisors[stream]?.start()
            logger.info("\(stream.rawValue) \(supervisors[stream] == nil ? "disabled" : stopped[stream]?.word ?? "started")")
        }
        // The streams' set-up leaves the resident set before the rest of the start.
        MemoryFootprint.dropMappedFilePages()
        control.attach(uploader)
        // Before the first cycle, which goes at once: it must know what the network costs.
        metered.start(factory.makeMeteredWatch(logger: Logger(.network)), config: config, uploader: uploader)
        control.start()
        watcher.start()
        sleep.start()
        supervisor.replaceComponents(StreamName.allCases.compactMap { supervisors[$0] } + [UploaderSupervision(uploader)])
        commitSync.start()
        maintenance.use(config, uploader: uploader, streams: supervisors, sleep: sleep)
        maintenance.start()
        // The last start-up stage ends: the first upload cycle (a TLS handshake, often) runs
        // on a resident set without the start in it.
        MemoryFootprint.dropMappedFilePages()
        uploader.start()
        notifier.ready(status: "capturing " + (supervisors.keys.sorted().map(\.rawValue).joined(separator: ", ")))
    }

    /// Stops capture (the audio chunk in progress is finished and written), then the
    /// uploader (a request in flight is aborted; its records stay pending), then corrects
    /// what it can of the records held meanwhile (the streams' last ones), so they need
    /// no other process to go out.
    public func stop() {
        notifier.stopping()
        maintenance.stop()
        commitSync.stop()
        control.stop()
        storageKick.stop()
        let (supervisors, uploader, network, sleep) = state.withLock { s in
            defer {
                s.network = nil
                s.sleep = nil
            }
            return (s.supervisors, s.uploader, s.network, s.sleep)
        }
        network?.stop()
        sleep?.stop()
        metered.stop()
        for supervisor in supervisors.values { supervisor.stop() }
        coverage.stopped(Array(supervisors.keys))
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
        control.use(config)
        database.commitSync.window = TimeInterval(config.storage.syncSeconds)
        storageGuard.update(config.storage.limits)
        storageKick.resume()
        start()
    }

    /// Applies the pause switches now (SIGUSR1: `ariata-agent pause` and `resume` wrote them).
    public func applyPauseSwitches() {
        control.apply()
    }

    /// One maintenance round now (the timer runs them every `roundInterval`).
    @discardableResult
    public func runMaintenanceRound() -> [String: Liveness] {
        maintenance.run()
    }
}
