import AgentCore
import Foundation
import Logging
import Platform
import Synchronization

/// The maintenance round, every `[daemon] check_interval` on its own timer: the
/// storage guard, the commit-sync deadline, the stream policies, the clock's correction,
/// the sleep watch's look for a resume logind did not announce,
/// the supervisor (health, restarts, the watchdog), the desktop notices, the metrics file,
/// retention once an hour, and memory handed back (docs/operations.md, "Run").
final class MaintenanceRound: Sendable {
    struct Parts: Sendable {
        let database: AgentDatabase
        let supervisor: Supervisor
        let storageGuard: StorageGuard
        let commitSync: CommitSyncDeadline
        let control: StreamControl
        let clockCorrection: ClockCorrection
        let metrics: MetricsTextfile
        let notices: DesktopNotices
        /// Hands memory back and drops the mapped file pages each round; false only for a
        /// daemon inside a test's process, whose pages are the test runner's.
        var trimsMemory = true
    }

    private let parts: Parts
    private let clock: any WallClock
    private let scheduler: any TimerScheduling
    private let interval: TimeInterval
    private let logger: Logger
    private let timer: Mutex<(any ScheduledTimer)?> = Mutex(nil)
    private let state: Mutex<State>

    private struct State {
        var config: AgentConfig
        var uploader: (any UploadComponent)?
        var streams: [StreamName: StreamSupervisor] = [:]
        var sleep: SleepWatch?
        var lastRetention: Date?
        /// Rounds run since the daemon started.
        var rounds = 0
    }

    init(_ parts: Parts, config: AgentConfig, clock: any WallClock, scheduler: any TimerScheduling, interval: TimeInterval,
         logger: Logger) {
        self.parts = parts
        self.clock = clock
        self.scheduler = scheduler
        self.interval = interval
        self.logger = logger
        state = Mutex(State(config: config))
    }

    /// The configuration, uploader, streams and sleep watch the rounds work with (a reload's too).
    func use(_ config: AgentConfig, uploader: (any UploadComponent)?, streams: [StreamName: StreamSupervisor] = [:],
             sleep: SleepWatch? = nil) {
        state.withLock { s in
            s.config = config
            s.uploader = uploader
            s.streams = streams
            s.sleep = sleep
        }
    }

    /// The first round within 5 s (or one interval, if shorter), then every interval.
    func start() {
        let timer = scheduler.makeTimer(label: "ariata.maintenance") { [weak self] in self?.run() }
        self.timer.withLock { $0 = timer }
        timer.start(interval: interval, firstAfter: min(interval, 5))
    }

    func stop() {
        timer.withLock { $0 }?.stop()
    }

    /// One round. The guard goes first, because on a full disk everything after it writes
    /// to the queue; each part runs whatever the others did, and none of them throws, so a
    /// failing disk cannot stop the round.
    @discardableResult
    func run() -> [String: Liveness] {
        trimMemory(round: state.withLock { $0.rounds += 1; return $0.rounds })
        parts.commitSync.arm()
        parts.storageGuard.pass()
        let (config, uploader, streams, sleep) = state.withLock { ($0.config, $0.uploader, $0.streams, $0.sleep) }
        // Asleep, whether the machine resumed without logind's signal: the answer comes on
        // the watch's bus thread, which resumes capture as the signal would.
        sleep?.checkResume()
        parts.control.check(uploader: uploader)
        parts.clockCorrection.pass(trustSystemClock: config.daemon.trustSystemClock)
        let results = parts.supervisor.checkLiveness()
        parts.notices.check(noticeObservation(config: config, results: results, streams: streams), config: config.notify)
        // After the supervisor, so the file carries this round's health.
        parts.metrics.write(config: config)
        applyRetentionHourly(config.storage.retention)
        return results
    }

    /// What this round saw that a desktop notice may be about.
    private func noticeObservation(config: AgentConfig, results: [String: Liveness],
                                   streams: [StreamName: StreamSupervisor]) -> NoticeObservation {
        let switches = parts.control.serverSwitches
        var off: [StreamName: String] = [:]
        for stream in StreamName.allCases where config.isEnabled(stream) {
            off[stream] = switches?.offReason(stream)
        }
        var microphone: (health: Liveness, deviceInUse: String?)?
        if let supervisor = streams[.microphone], !supervisor.isPaused, let health = results[StreamName.microphone.rawValue] {
            microphone = (health, supervisor.details()[StreamCounter.deviceInUse])
        }
        return NoticeObservation(freeDiskBytes: DiskSpace.availableBytes(at: parts.database.path),
                                 belowFloor: parts.storageGuard.isBelowFloor, floorMB: config.storage.minFreeMB,
                                 queueDirectory: (parts.database.path as NSString).deletingLastPathComponent,
                                 uploader: results["uploader"], microphone: microphone,
                                 microphoneFallback: config.microphone.fallback, switchedOff: off,
                                 configurationComplete: switches?.isConfigurationComplete ?? true)
    }

    private func applyRetentionHourly(_ retention: RetentionPolicy) {
        let due = state.withLock { s -> Bool in
            let now = clock.now()
            guard (s.lastRetention.map { now.timeIntervalSince($0) >= 3_600 } ?? true) else { return false }
            s.lastRetention = now
            return true
        }
        guard due else { return }
        do {
            let deleted = try parts.database.housekeeping.applyRetention(retention)
            if deleted > 0 { logger.info("retention deleted \(deleted) uploaded or failed records") }
        } catch {
            logger.error("retention failed: \(error); it runs again at the next maintenance round")
            state.withLock { $0.lastRetention = nil }
        }
    }

    /// Memory freed since the last round (an upload's bodies) goes back to the system, and
    /// the program's and libraries' pages are dropped once more, as before the start: what
    /// only the start ran (the first round is 5 s in), an upload cycle's TLS handshake or
    /// another round's work leaves the resident set, and what the streams run comes back:
    /// an upload cycle runs beside the streams' pages and at most one round's, not beside
    /// all the daemon ran since it started. The first two rounds also hand the start's
    /// pages back to the page cache; the later ones keep them cached, so that what comes
    /// back is not read from the card (docs/decisions/0005-start-up-page-drop.md).
    private func trimMemory(round: Int) {
        guard parts.trimsMemory else { return }
        MemoryFootprint.releaseFreedMemory()
        MemoryFootprint.dropMappedFilePages(handingBackCache: round <= 2)
    }
}
