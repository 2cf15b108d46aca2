import AgentCore
import DBus
import Foundation
import Logging
import Platform
import Synchronization

/// Prepares for the machine's sleep the way systemd-logind offers a daemon: a *delay*
/// inhibitor lock held while running, and its `PrepareForSleep` signal. On
/// `PrepareForSleep(true)` `onSleep` runs (capture stopped, the audio chunk in progress
/// written and committed, the queue synced), then the lock is released so the machine
/// sleeps without waiting out `InhibitDelayMaxSec`; on `(false)` the lock is taken again
/// and `onWake` runs (capture restarted with a new chunk, an upload cycle at once).
/// docs/laptop.md, "Sleep and wake".
///
/// Some systemd releases send no `(false)` after hibernation or suspend-then-hibernate,
/// so while asleep each maintenance round calls `checkResume()`: logind's
/// `PreparingForSleep` read, with the suspend detector's evidence (`SleepResumeEvidence`),
/// and capture resumed as after the signal when the machine is awake; logind restarting
/// while asleep is asked the same. Without logind (a board without systemd, a container)
/// it says so once and the daemon goes on as before: a suspend then cuts the chunk in
/// progress at its last page, as a power cut would. logind is followed as a `DBusService`
/// on the process's shared system-bus connection, whose thread sleeps in poll(2) with no
/// time-out: no wake-ups (docs/dbus.md).
public final class SleepWatch: Sendable {
    static let logind = "org.freedesktop.login1"
    static let managerPath = "/org/freedesktop/login1"
    static let managerInterface = "org.freedesktop.login1.Manager"

    private let service: any DBusServiceWatching
    private let logger: Logger
    private let onSleep: @Sendable () -> Void
    private let onWake: @Sendable () -> Void
    private let onHeldAwake: @Sendable (String?) -> Void
    /// The clocks the suspend detector reads (a test's `VirtualScheduler` suspends).
    private let clocks: any TimerScheduling
    /// Where capture is stopped before sleep and started after it: never the bus thread,
    /// which every D-Bus client of the process shares and which a stopping stream may call
    /// through (GeoClue's client let go, a strap disconnected).
    private let work = DispatchQueue(label: "ariata.sleep")
    private let state = Mutex(State())

    private struct State {
        var following: DBusRegistration?
        /// `PrepareForSleep` on the connection it was subscribed on.
        var signal: (connection: DBusConnection, registration: DBusRegistration)?
        /// Whether logind's availability was reported once already.
        var heard = false
        /// The inhibitor lock: logind holds off sleep until it is closed.
        var lock: Int32?
        var asleep = false
        /// Counts the sleeps and wakes, so an answer asked for before one is not applied after it.
        var epoch = 0
        /// From `PrepareForSleep(true)`: the time spent suspended since.
        var suspend: SuspendDetector?
        var suspended: Double = 0
        /// The fault shown while the machine seems awake but capture is still held.
        var heldAwake: String?
    }

    /// - Parameters:
    ///   - onHeldAwake: the machine seems awake while logind has not ended its sleep (the
    ///     reason), or no longer (nil): the held streams show it as a fault.
    public convenience init(bus: DBusBus = .system, clocks: any TimerScheduling = DispatchScheduler(), logger: Logger,
                            onSleep: @escaping @Sendable () -> Void, onWake: @escaping @Sendable () -> Void,
                            onHeldAwake: @escaping @Sendable (String?) -> Void = { _ in }) {
        self.init(service: DBusService(Self.logind, bus: bus), clocks: clocks, logger: logger,
                  onSleep: onSleep, onWake: onWake, onHeldAwake: onHeldAwake)
    }

    public init(service: any DBusServiceWatching, clocks: any TimerScheduling = DispatchScheduler(), logger: Logger,
                onSleep: @escaping @Sendable () -> Void, onWake: @escaping @Sendable () -> Void,
                onHeldAwake: @escaping @Sendable (String?) -> Void = { _ in }) {
        self.service = service
        self.clocks = clocks
        self.logger = logger
        self.onSleep = onSleep
        self.onWake = onWake
        self.onHeldAwake = onHeldAwake
    }

    deinit { stop() }

    /// Whether the lock is held now (for tests and `status`).
    public var holdsLock: Bool { state.withLock { $0.lock != nil } }

    /// Whether capture is held for the machine's sleep now.
    public var isAsleep: Bool { state.withLock { $0.asleep } }

    public func start() {
        let following = service.follow { [weak self] event in self?.serviceChanged(event) }
        state.withLock { $0.following = following }
    }

    public func stop() {
        let (following, signal, lock) = state.withLock { s in
            defer {
                s.following = nil
                s.signal = nil
                s.lock = nil
                s.heard = false
            }
            return (s.following, s.signal, s.lock)
        }
        following?.cancel()
        signal?.registration.cancel()
        if let lock { close(lock) }
    }

    /// logind's comings and goings, each once (`DBusService`): the first word takes the
    /// lock (a logind not yet running is started by the call), a new logind too, since
    /// logind restarting drops every lock; asleep, the new one is asked whether the machine
    /// still sleeps. The bus lost and back is logind back.
    private func serviceChanged(_ event: DBusServiceEvent) {
        let first = state.withLock { s -> Bool in
            defer { s.heard = true }
            return !s.heard
        }
        switch event {
        case .appeared(_, let connection):
            guard follow(on: connection) else { return }
            if isAsleep { checkResume() } else { takeLock(on: connection) }
        case .vanished(.notOnBus):
            // Not running yet: asking for the lock starts it where it is activatable, and
            // says so once where it is not.
            guard first, let connection = try? service.connection(), follow(on: connection) else { return }
            takeLock(on: connection)
        case .vanished(.noBus(let error)):
            if first {
                logger.notice("no system bus (\(error)): the agent does not prepare for sleep; a suspend cuts the audio chunk in progress")
            } else {
                logger.notice("the system bus was lost (\(error)): the agent prepares for sleep again once it is back")
            }
        }
    }

    /// `PrepareForSleep` subscribed on `connection` unless it is already; false when it
    /// cannot be (said once).
    private func follow(on connection: DBusConnection) -> Bool {
        if state.withLock({ $0.signal?.connection === connection }) { return true }
        do {
            let sleep = try connection.subscribe(DBusMatchRule(sender: Self.logind, path: Self.managerPath,
                                                               interface: Self.managerInterface, member: "PrepareForSleep")) { [weak self] message in
                guard let going = message.arguments.first?.bool else { return }
                self?.prepare(sleeping: going)
            }
            let old = state.withLock { s -> DBusRegistration? in
                defer { s.signal = (connection, sleep) }
                return s.signal?.registration
            }
            old?.cancel()
            return true
        } catch {
            logger.notice("cannot follow logind's sleep signal (\(error)): the agent does not prepare for sleep")
            return false
        }
    }

    /// Asks logind for the delay lock (asynchronously: this may run on the bus thread).
    private func takeLock(on connection: DBusConnection) {
        let call = DBusMethodCall(destination: Self.logind, path: Self.managerPath, interface: Self.managerInterface,
                                  member: "Inhibit", arguments: [.string("sleep"), .string("ariata-agent"),
                                                                 .string("Writing the audio chunk in progress and committing captures"),
                                                                 .string("delay")])
        connection.call(call, timeout: 10) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let values):
                guard case .unixFD(let fd)? = values.first else { return }
                let old = state.withLock { s -> Int32? in
                    defer { s.lock = fd }
                    return s.lock
                }
                if let old { close(old) }
                logger.debug("holding logind's sleep delay lock")
            case .failure(let error):
                if error.isServiceMissing {
                    logger.notice("no logind on the system bus: the agent does not prepare for sleep; a suspend cuts the audio chunk in progress")
                } else {
                    logger.warning("logind refused the sleep delay lock (\(error)): a suspend cuts the audio chunk in progress")
                }
            }
        }
    }

    /// The maintenance round's look while asleep (nothing otherwise): logind's
    /// `PreparingForSleep` asked, and the answer judged with the time suspended since the
    /// signal on the bus thread (`SleepResumeEvidence`); awake, capture resumes as after
    /// `PrepareForSleep(false)`.
    public func checkResume() {
        let asked = state.withLock { s -> (connection: DBusConnection, epoch: Int, suspended: Double)? in
            guard s.asleep, let connection = s.signal?.connection, connection.lostReason == nil else { return nil }
            if let slept = s.suspend?.suspendedSinceLastCheck() { s.suspended += slept }
            return (connection, s.epoch, s.suspended)
        }
        guard let asked else { return }
        let get = DBusMethodCall(destination: Self.logind, path: Self.managerPath, interface: DBusConnection.propertiesInterface,
                                 member: "Get", arguments: [.string(Self.managerInterface), .string("PreparingForSleep")])
        asked.connection.call(get, timeout: 5) { [weak self] result in
            let answer: LogindSleepAnswer
            switch result {
            case .success(let values):
                guard let preparing = values.first?.unwrapped.bool else {
                    answer = .failed("PreparingForSleep answered with \(values), not a boolean")
                    break
                }
                answer = .preparingForSleep(preparing)
            case .failure(let error) where error.isServiceMissing:
                answer = .absent
            case .failure(let error):
                answer = .failed("\(error)")
            }
            self?.apply(SleepResumeEvidence.judge(answer, suspendedSeconds: asked.suspended), epoch: asked.epoch)
        }
    }

    /// On the bus thread, in order with the signals.
    private func apply(_ evidence: SleepResumeEvidence, epoch: Int) {
        guard state.withLock({ $0.asleep && $0.epoch == epoch }) else { return }
        switch evidence {
        case .asleep:
            setHeldAwake(nil)
        case .awake(let why):
            prepare(sleeping: false, why: why)
        case .heldAwake(let reason):
            setHeldAwake(reason)
        }
    }

    private func setHeldAwake(_ reason: String?) {
        let changed = state.withLock { s -> Bool in
            defer { s.heldAwake = reason }
            return s.heldAwake != reason
        }
        guard changed else { return }
        if let reason { logger.warning("capture is held for sleep, but \(reason)") }
        onHeldAwake(reason)
    }

    /// Decided on the bus thread, in order with the signals; done on the work queue, in the
    /// same order. `why`: the evidence of a resume that came without logind's signal.
    private func prepare(sleeping: Bool, why: String? = nil) {
        let changed = state.withLock { s -> Bool in
            defer {
                if s.asleep != sleeping {
                    s.asleep = sleeping
                    s.epoch += 1
                    s.suspend = sleeping ? SuspendDetector(clocks: clocks) : nil
                    s.suspended = 0
                    s.heldAwake = nil
                }
            }
            return s.asleep != sleeping
        }
        guard changed else { return }
        work.async { [self] in
            if sleeping {
                let started = Monotonic.now
                onSleep()
                let lock = state.withLock { s -> Int32? in
                    defer { s.lock = nil }
                    return s.lock
                }
                if let lock { close(lock) }
                logger.notice("ready for sleep in \(String(format: "%.2f", Monotonic.now - started)) s: capture stopped, the chunk in progress written and committed")
            } else {
                let signal = why.map { "woke from sleep without logind's signal (\($0))" } ?? "woke from sleep"
                logger.notice("\(signal): capture starts again with a new chunk, and an upload cycle runs now")
                if let connection = state.withLock({ $0.signal?.connection }) { takeLock(on: connection) }
                onWake()
            }
        }
    }
}

extension SleepWatch {
    /// The daemon's sleep watch: the streams stop before sleep, with everything captured so
    /// far in the queue and on disk before the lock goes, and start again after it, with an
    /// upload cycle at once.
    static func holding(_ streams: [StreamSupervisor], database: AgentDatabase, uploader: any UploadComponent,
                        logger: Logger) -> SleepWatch {
        SleepWatch(logger: logger) {
            for supervisor in streams { supervisor.sleep() }
            database.syncWaitingCaptures()
        } onWake: { [weak uploader] in
            for supervisor in streams { supervisor.wake() }
            uploader?.cycleNow("the machine woke from sleep")
        } onHeldAwake: { reason in
            for supervisor in streams { supervisor.heldForSleep(whileAwake: reason) }
        }
    }
}
