import AgentCore
import Capture
import Foundation
import Logging
import Platform
import Synchronization
import Upload

/// Decides which of the enabled streams capture, and applies it to their supervisors: the
/// pause switches (`ariata-agent pause`; a timed pause ends on time through its own timer),
/// the server's stream switches (`ServerSwitchKeeper`; the file is a veto, the server can
/// only turn off) and the power policy (the microphone paused on a low battery, uploads
/// spaced out), and the microphone's quiet hours and muted places (`MicrophoneGate`, whose
/// changes by the clock share the pause-end timer). A new policy joins here
/// (docs/architecture.md, "The daemon").
final class StreamControl: Sendable {
    private let database: AgentDatabase
    private let clock: any WallClock
    private let scheduler: any TimerScheduling
    private let power: PowerGovernor
    private let logger: Logger
    private let keeper: Mutex<ServerSwitchKeeper?> = Mutex(nil)
    /// Fires when the earliest timed pause ends, so capture resumes on time rather than
    /// at the next maintenance round (a wall-clock deadline: it fires on waking from suspend).
    private let pauseEnd: Mutex<(any ScheduledTimer)?> = Mutex(nil)
    private let state: Mutex<State>
    /// The quiet hours and muted places; the streams' factory hands it to the microphone
    /// (which cuts its audio at the boundary) and the location stream (which tells it fixes).
    let gate: MicrophoneGate
    /// The muted spans a Virtues box is told of.
    private let mutedSpans: MutedSpanWriter
    private let timeZone: TimeZone

    /// A stream that starts not capturing: the start's log word, and the ledger's reason.
    struct Held {
        var word: String
        var reason: CoverageState
    }

    private struct State {
        var config: AgentConfig
        var supervisors: [StreamName: StreamSupervisor] = [:]
    }

    init(config: AgentConfig, database: AgentDatabase, clock: any WallClock, scheduler: any TimerScheduling,
         power: PowerGovernor, timeZone: TimeZone = .current, logger: Logger) {
        self.timeZone = timeZone
        gate = MicrophoneGate(config: config, timeZone: timeZone, clock: clock)
        mutedSpans = MutedSpanWriter(queue: database.recordQueue, clock: clock,
                                     clockTrust: .live(trustSystemClock: config.daemon.trustSystemClock),
                                     enabled: Self.tellsMutedSpans(config), logger: logger)
        self.database = database
        self.clock = clock
        self.scheduler = scheduler
        self.power = power
        self.logger = logger
        state = Mutex(State(config: config))
        let keeper = ServerSwitchKeeper(server: config.server, database: database, clock: clock, scheduler: scheduler,
                                        logger: Logger(.switches),
                                        makeTransport: MemoryFootprint.droppingPagesFirst(CurlTransport.factory)) { [weak self] old, new in
            self?.serverSwitchesChanged(from: old, to: new)
        }
        self.keeper.withLock { $0 = keeper }
        gate.addObserver { [weak self] old, new in self?.gateChanged(from: old, to: new) }
    }

    private var switchKeeper: ServerSwitchKeeper? { keeper.withLock { $0 } }

    /// Muted spans go to a Virtues box alone, and only for a microphone the file enables.
    private static func tellsMutedSpans(_ config: AgentConfig) -> Bool {
        config.box.isPaired && config.microphone.enabled
    }

    /// The server's switches in force (its last answer), nil before any.
    var serverSwitches: ServerSwitches? { switchKeeper?.current }

    /// A reload's configuration: in force from the next `prepare`.
    func use(_ config: AgentConfig) {
        state.withLock { $0.config = config }
        mutedSpans.setEnabled(Self.tellsMutedSpans(config))
        gate.use(config)
    }

    /// The configuration the streams run with: the file's, with what the server's last
    /// answer sets and the file leaves open (docs/upload.md#the-servers-stream-switches).
    func streamConfig() -> AgentConfig {
        let config = state.withLock { $0.config }
        return switchKeeper?.current?.applied(to: config) ?? config
    }

    /// First of all at a start: the server's switches, asked and waited for a moment
    /// (docs/upload.md#the-servers-stream-switches), so that `prepare` holds a stream
    /// switched off while the daemon was down before it captures anything.
    func askServerBeforeCapture() {
        switchKeeper?.askBeforeCapture(server: state.withLock { $0.config.server })
    }

    /// Before the streams start: the switches kept for this configuration's server apply
    /// from the first moment (a restart without network keeps the last answer), ended
    /// pauses are cleared, the power supply is read. Returns the streams that start not capturing,
    /// each with the word the start's log line uses.
    func prepare() -> [StreamName: Held] {
        let config = state.withLock { $0.config }
        switchKeeper?.use(config.server)
        let switches = PauseSwitches(database: database)
        let now = clock.now()
        _ = try? switches.clearEnded(at: now)
        power.pass(config: config, uploader: nil)
        var stopped: [StreamName: Held] = [:]
        if power.policy?.microphonePaused == true { stopped[.microphone] = Held(word: "paused", reason: .lowBattery) }
        for stream in switchKeeper?.current?.switchedOffStreams ?? [] { stopped[stream] = Held(word: "switched off by the server", reason: .serverOff) }
        for stream in (try? switches.pausedStreams(at: now)) ?? [] { stopped[stream] = Held(word: "paused", reason: .paused) }
        let gated = gate.evaluate()
        // What an earlier process stored (killed at a muted place, say) is not this one's.
        storeMute(gated)
        if let muted = gated.closedBy, muted.isMute, stopped[.microphone] == nil {
            stopped[.microphone] = muted == .schedule ? Held(word: "muted (quiet hours)", reason: .quiet)
                : Held(word: "muted (a muted place)", reason: .mutedPlace)
        }
        return stopped
    }

    /// The streams' supervisors, once made.
    func attach(_ supervisors: [StreamName: StreamSupervisor]) {
        state.withLock { $0.supervisors = supervisors }
    }

    /// The uploader, before it starts: the power policy's upload settings, and the server's
    /// switches asked again when uploads recover after an outage.
    func attach(_ uploader: any UploadComponent) {
        if let policy = power.policy { uploader.setPower(factor: policy.uploadFactor, postponed: policy.uploadsPostponed) }
        let keeper = switchKeeper
        uploader.onRecovery { keeper?.askSoon("uploads work again after an outage") }
    }

    /// Starts the policies' own work: the server's switches (asked now, then hourly) and
    /// the pause-end timer.
    func start() {
        switchKeeper?.start(server: state.withLock { $0.config.server })
        pauseEnd.withLock { $0 = scheduler.makeTimer(label: "ariata.pause-end") { [weak self] in self?.apply() } }
        armPauseEnd()
    }

    func stop() {
        pauseEnd.withLock { current -> (any ScheduledTimer)? in
            defer { current = nil }
            return current
        }?.stop()
        // A span still open ends with the daemon; the next start begins a new one.
        mutedSpans.close(gate.current)
        gate.forget()
        switchKeeper?.stop()
        // Stopped streams are nobody's to pause: an answer that comes before the next
        // start's streams are attached applies to those (a reload asks first).
        state.withLock { $0.supervisors = [:] }
    }

    /// The maintenance round's part: the power supply read again (the uploader told of a
    /// change), then every switch applied.
    func check(uploader: (any UploadComponent)?) {
        power.pass(config: state.withLock { $0.config }, uploader: uploader)
        apply()
    }

    /// Reads the pause switches (written by `ariata-agent pause/resume`) and applies them
    /// with the server's and the power policy's: timed pauses that have ended are cleared
    /// and their streams resumed, and the pause-end timer is set for the next end.
    func apply() {
        let pauses = PauseSwitches(database: database)
        let now = clock.now()
        do {
            for stream in try pauses.clearEnded(at: now) {
                logger.notice("\(stream.rawValue): the timed pause has ended")
            }
        } catch {
            // They read as not paused all the same; clearing is tidiness, retried next time.
            logger.warning("cannot clear ended pauses: \(error); retrying at the next maintenance round")
        }
        guard let paused = try? pauses.pausedStreams(at: now) else { return }
        let powerPausesMicrophone = power.policy?.microphonePaused == true
        let switches = switchKeeper?.current
        let supervisors = state.withLock { $0.supervisors }
        for (stream, supervisor) in supervisors {
            let serverReason = paused.contains(stream) ? nil : switches?.offReason(stream)
            let byServer = serverReason != nil
            let byPower = stream == .microphone && powerPausesMicrophone && !paused.contains(stream) && !byServer
            var why = serverReason ?? (byPower ? "the battery is low ([power] low_battery_percent); it resumes on mains" : nil)
            var muted: CoverageState?
            if stream == .microphone {
                // The gate keeps every reason, so its state says why the microphone is off.
                gate.hold(paused.contains(stream) || byPower ? .paused : byServer ? .server : nil)
                let gated = gate.evaluate()
                if let reason = gated.closedBy, reason.isMute {
                    muted = reason == .schedule ? .quiet : .mutedPlace
                    if why == nil && !paused.contains(stream) { why = mutedReason(gated) }
                }
            }
            // The ledger's reason: the person's pause first, as the log's.
            let reason: CoverageState? = paused.contains(stream) ? .paused : byServer ? .serverOff : byPower ? .lowBattery : muted
            supervisor.setPaused(reason != nil, until: try? pauses.pausedUntil(stream, at: now), why: why, reason: reason)
        }
        if supervisors[.microphone] == nil { gate.evaluate() }
        armPauseEnd()
    }

    /// A new answer from the server: streams whose settings it changed are restarted with
    /// them (a paused one starts with them when it resumes), and the switches are applied
    /// now, so a stream switched off stops within seconds of the answer.
    private func serverSwitchesChanged(from old: ServerSwitches?, to new: ServerSwitches) {
        let (supervisors, file) = state.withLock { ($0.supervisors, $0.config) }
        let before = old?.applied(to: file) ?? file
        let after = new.applied(to: file)
        if before.location != after.location { supervisors[.location]?.restart() }
        if before.health.serverMetrics != after.health.serverMetrics { supervisors[.health]?.restart() }
        apply()
    }

    /// The gate's state changed (a boundary passed, a fix entered or left a muted place, a
    /// reload): the span ended is told to a box, the state kept for `status`, the log told,
    /// and the switches applied soon on the timer's queue (a fix comes on the location
    /// thread, which must not wait for the microphone to stop).
    private func gateChanged(from old: MicrophoneGate.State, to new: MicrophoneGate.State) {
        mutedSpans.changed(from: old, to: new)
        storeMute(new)
        if let reason = new.closedBy, reason.isMute {
            logger.notice("microphone muted: \(mutedReason(new))")
        } else if let reason = old.closedBy, reason.isMute {
            logger.notice("microphone: \(reason == .schedule ? "the quiet hours have ended" : "no longer in a muted place"); it captures again unless paused")
        }
        guard let timer = pauseEnd.withLock({ $0 }) else { return }
        timer.runOnce(after: 0)
    }

    /// Keeps the state for `status` while the quiet hours or a muted place hold the
    /// microphone, and nothing otherwise.
    private func storeMute(_ state: MicrophoneGate.State) {
        let stored = state.closedBy.flatMap { $0.isMute ? StoredMicrophoneMute(mutedBy: $0.rawValue, since: state.since, until: state.until) : nil }
        do {
            try database.agentState.set(AgentStateKey.microphoneMuted, stored.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) })
        } catch {
            logger.warning("cannot store the microphone's muted state for status: \(error)")
        }
    }

    /// For the log and the pause line: "quiet hours until 07:00", "in a muted place".
    private func mutedReason(_ state: MicrophoneGate.State) -> String {
        switch state.closedBy {
        case .schedule?:
            return "quiet hours ([[microphone.quiet]])" + (state.until.map { " until \(LocalClockTime.string($0, in: timeZone))" } ?? "")
        default:
            return "in a muted place ([[location.exclude]] microphone = \"mute\")"
        }
    }

    /// Sets the pause-end timer for the earliest end of a timed pause or change of the
    /// microphone's gate by the clock, or idles it.
    private func armPauseEnd() {
        guard let timer = pauseEnd.withLock({ $0 }) else { return }
        let now = clock.now()
        let pauseEnd = try? PauseSwitches(database: database).nextEnd(after: now)
        let gateChange = gate.nextChange(after: now)
        guard let next = [pauseEnd, gateChange].compactMap({ $0 }).min() else {
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
}
