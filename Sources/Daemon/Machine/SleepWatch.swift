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
/// Without logind (a board without systemd, a container) it says so once and the daemon
/// goes on as before: a suspend then cuts the chunk in progress at its last page, as a
/// power cut would. It sleeps in its bus thread's poll with no time-out: no wake-ups.
public final class SleepWatch: Sendable {
    static let logind = "org.freedesktop.login1"
    static let managerPath = "/org/freedesktop/login1"
    static let managerInterface = "org.freedesktop.login1.Manager"

    private let bus: DBusBus
    private let logger: Logger
    private let onSleep: @Sendable () -> Void
    private let onWake: @Sendable () -> Void
    private let state = Mutex(State())

    private struct State {
        var connection: DBusConnection?
        var registrations: [DBusRegistration] = []
        /// The inhibitor lock: logind holds off sleep until it is closed.
        var lock: Int32?
        var asleep = false
    }

    public init(bus: DBusBus = .system, logger: Logger, onSleep: @escaping @Sendable () -> Void,
                onWake: @escaping @Sendable () -> Void) {
        self.bus = bus
        self.logger = logger
        self.onSleep = onSleep
        self.onWake = onWake
    }

    deinit { stop() }

    /// Whether the lock is held now (for tests and `status`).
    public var holdsLock: Bool { state.withLock { $0.lock != nil } }

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
            // logind restarting drops every lock: take it again from the new one.
            let restart = try connection.subscribe(.nameOwnerChanged(Self.logind)) { [weak self] message in
                guard message.arguments.count == 3, message.arguments[2].string?.isEmpty == false else { return }
                self?.takeLock(on: connection)
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

    /// On the bus thread: nothing else on this connection needs it meanwhile.
    private func prepare(sleeping: Bool) {
        let (changed, connection) = state.withLock { s -> (Bool, DBusConnection?) in
            defer { s.asleep = sleeping }
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
            logger.notice("woke from sleep: capture starts again with a new chunk, and an upload cycle runs now")
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
        }
    }
}
