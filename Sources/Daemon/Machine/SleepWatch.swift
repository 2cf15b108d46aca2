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
/// progress at its last page, as a power cut would. It sleeps in its bus thread's poll
/// with no time-out: no wake-ups.
public final class SleepWatch: Sendable {
    static let logind = "org.freedesktop.login1"
    static let managerPath = "/org/freedesktop/login1"
    static let managerInterface = "org.freedesktop.login1.Manager"

    private let bus: DBusBus
    private let logger: Logger
    private let onSleep: @Sendable () -> Void
    private let onWake: @Sendable () -> Void
    private let onHeldAwake: @Sendable (String?) -> Void
    /// The clocks the suspend detector reads (a test's `VirtualScheduler` suspends).
    private let clocks: any TimerScheduling
    private let state = Mutex(State())

    private struct State {
        var connection: DBusConnection?
        var registrations: [DBusRegistration] = []
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
    public init(bus: DBusBus = .system, clocks: any TimerScheduling = DispatchScheduler(), logger: Logger,
                onSleep: @escaping @Sendable () -> Void, onWake: @escaping @Sendable () -> Void,
                onHeldAwake: @escaping @Sendable (String?) -> Void = { _ in }) {
        self.bus = bus
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
        let connection: DBusConnection
        do {
            connection = try DBusConnection(bus, threadName: "ariata-sleep")
        } catch {
            logger.notice("no system bus (\(error)): the agent does not prepare for sleep; a suspend cuts the audio chunk in progress")
            return
        }
        do {
            let sleep = try connection.subscribe(DBusMatchRule(sender: Self.logind, path: Self.managerPath,
                                                               interface: Self.managerInterface, member: "PrepareForSleep")) { [weak self] message in
                guard let going = message.arguments.first?.bool else { return }
                self?.prepare(sleeping: going)
            }
            // logind restarting drops every lock: take it again from the new one. Asleep, the
            // new logind is asked whether the machine still sleeps (a resume takes the lock).
            let restart = try connection.subscribe(.nameOwnerChanged(Self.logind)) { [weak self] message in
                guard let self, message.arguments.count == 3, message.arguments[2].string?.isEmpty == false else { return }
                if isAsleep {
                    checkResume()
                } else {
                    takeLock(on: connection)
                }
            }
            state.withLock { s in
                s.connection = connection
                s.registrations = [sleep, restart]
            }
        } catch {
            logger.notice("cannot follow logind's sleep signal (\(error)): the agent does not prepare for sleep")
            connection.close()
            return
        }
        takeLock(on: connection)
    }

    public func stop() {
        let (connection, registrations, lock) = state.withLock { s in
            defer {
                s.connection = nil
                s.registrations = []
                s.lock = nil
            }
            return (s.connection, s.registrations, s.lock)
        }
        registrations.forEach { $0.cancel() }
        if let lock { close(lock) }
        connection?.close()
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
            guard s.asleep, let connection = s.connection else { return nil }
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

    /// On the bus thread: nothing else on this connection needs it meanwhile. `why`: the
    /// evidence of a resume that came without logind's signal.
    private func prepare(sleeping: Bool, why: String? = nil) {
        let (changed, connection) = state.withLock { s -> (Bool, DBusConnection?) in
            defer {
                if s.asleep != sleeping {
                    s.asleep = sleeping
                    s.epoch += 1
                    s.suspend = sleeping ? SuspendDetector(clocks: clocks) : nil
                    s.suspended = 0
                    s.heldAwake = nil
                }
            }
            return (s.asleep != sleeping, s.connection)
        }
        guard changed else { return }
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
            if let connection { takeLock(on: connection) }
            onWake()
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
