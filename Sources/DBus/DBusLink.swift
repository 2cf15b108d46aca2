import AgentCore
import Foundation
import Synchronization

/// What a bus connection tells those who follow it: a connection made (at first, or again
/// after the bus was lost), or the bus lost.
public enum DBusLinkEvent: Sendable {
    case connected(DBusConnection)
    case lost(DBusError)
}

/// A connection to a bus that is made again after the bus is lost, with
/// `DBusTuning.reconnect`'s backoff, for as long as anyone follows it; those who follow it
/// hear of each loss and each new connection. A bus that was never reached is not retried
/// on a timer: the next client that asks tries again, so a machine without the bus does
/// not wake for it.
///
/// `shared(_:)` is the process's one link per bus, which GeoClue, logind, NetworkManager
/// and the notifications share: one `DBusConnection`, so one bus thread, per bus; it lives
/// while someone holds it. A client whose service keys state to the connection makes a
/// link of its own: BlueZ, whose discovery and its filter belong to the D-Bus client that
/// asked (docs/dbus.md, docs/decisions/0016-one-connection-per-bus.md).
public final class DBusLink: Sendable {
    public let bus: DBusBus
    private let threadName: String
    private let reconnect: Backoff
    private let state = Mutex(State())
    private let retries: DispatchQueue

    private struct State {
        var connection: DBusConnection?
        var followers: [UInt64: @Sendable (DBusLinkEvent) -> Void] = [:]
        var nextFollower: UInt64 = 0
        var failures = RetryCounter()
        /// Made once at least: a loss is then retried on the backoff.
        var wasConnected = false
        var retryScheduled = false
        var closed = false
    }

    private static let living = Mutex<[String: WeakShared]>([:])

    /// The process's shared link to `bus` (made, not yet connected, when none lives).
    public static func shared(_ bus: DBusBus) -> DBusLink {
        living.withLock { living in
            if let shared = living[bus.description]?.shared { return shared }
            let shared: DBusLink
            switch bus {
            case .system: shared = DBusLink(bus, threadName: "ariata-sysbus")
            case .session: shared = DBusLink(bus, threadName: "ariata-userbus")
            case .address: shared = DBusLink(bus)
            }
            living[bus.description] = WeakShared(shared)
            return shared
        }
    }

    /// A link of its own, not the process's shared one.
    public init(_ bus: DBusBus, threadName: String = "ariata-dbus", reconnect: Backoff = DBusTuning.reconnect) {
        self.bus = bus
        self.threadName = threadName
        self.reconnect = reconnect
        retries = DispatchQueue(label: "ariata.dbus.reconnect")
    }

    deinit { close() }

    /// Ends the link: its connection closed, nothing made again, no one told more.
    public func close() {
        let connection = state.withLock { s -> DBusConnection? in
            s.closed = true
            s.followers = [:]
            return s.connection.take()
        }
        connection?.close()
    }

    /// The connection now, made when there is none (on the caller's thread).
    public func connection() throws(DBusError) -> DBusConnection {
        if let current = state.withLock({ $0.connection }) { return current }
        return try connect()
    }

    /// The connection if there is one now, without trying to make one.
    public var current: DBusConnection? { state.withLock { $0.connection } }

    /// Tells `handler` of the connection (at once, made when missing: `.lost` when it cannot
    /// be), then of every loss and every new connection, until the registration ends. A
    /// connection may be told twice (made for this follower, then handed to it).
    /// `.lost` comes on the lost connection's bus thread, `.connected` on the thread that
    /// made it: a retry's queue, or a client's that asked for the connection first.
    public func follow(_ handler: @escaping @Sendable (DBusLinkEvent) -> Void) -> DBusRegistration {
        let id = state.withLock { s -> UInt64 in
            s.nextFollower += 1
            s.followers[s.nextFollower] = handler
            return s.nextFollower
        }
        do {
            handler(.connected(try connection()))
        } catch {
            handler(.lost(error))
        }
        return DBusRegistration { [weak self] in
            self?.state.withLock { _ = $0.followers.removeValue(forKey: id) }
        }
    }

    private func connect() throws(DBusError) -> DBusConnection {
        if state.withLock({ $0.closed }) { throw DBusError.notConnected }
        let made: DBusConnection
        do {
            made = try DBusConnection(bus, threadName: threadName)
        } catch {
            state.withLock { $0.failures.failed() }
            throw error
        }
        // Two threads may have connected at once: the first one kept is everyone's.
        let (kept, spare) = state.withLock { s -> (DBusConnection?, DBusConnection?) in
            if s.closed { return (nil, made) }
            if let current = s.connection { return (current, made) }
            s.connection = made
            s.wasConnected = true
            s.failures.succeeded()
            return (made, nil)
        }
        if let spare {
            spare.close()
            guard let kept else { throw DBusError.notConnected }
            return kept
        }
        made.onLost { [weak self, weak made] reason in
            guard let self, let made else { return }
            self.lost(made, reason)
        }
        // Whoever made it (a retry, or a client asking first), every follower hears of it.
        let followers = state.withLock { Array($0.followers.values) }
        for follower in followers { follower(.connected(made)) }
        return made
    }

    /// On the lost connection's bus thread.
    private func lost(_ connection: DBusConnection, _ reason: DBusError) {
        let followers = state.withLock { s -> [@Sendable (DBusLinkEvent) -> Void] in
            guard s.connection === connection else { return [] }
            s.connection = nil
            return Array(s.followers.values)
        }
        for follower in followers { follower(.lost(reason)) }
        scheduleRetry()
    }

    private func scheduleRetry() {
        let delay = state.withLock { s -> TimeInterval? in
            guard !s.closed, s.wasConnected, !s.followers.isEmpty, s.connection == nil, !s.retryScheduled else { return nil }
            s.retryScheduled = true
            return s.failures.delay(from: reconnect, random: Double.random(in: 0..<1))
        }
        guard let delay else { return }
        retries.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self else { return }
            state.withLock { $0.retryScheduled = false }
            guard state.withLock({ $0.connection == nil && !$0.closed }) else { return }
            do {
                _ = try connect()
            } catch {
                scheduleRetry()
            }
        }
    }
}

private struct WeakShared {
    weak var shared: DBusLink?
    init(_ shared: DBusLink) { self.shared = shared }
}

/// The D-Bus seam's tunables.
public enum DBusTuning {
    /// The wait before making a lost bus connection again: the bus daemon restarting takes
    /// a second or two; one that stays away is asked about every few minutes at most.
    public static let reconnect = Backoff(base: 1, cap: 300, factor: 2, jitter: 0.2)
}
