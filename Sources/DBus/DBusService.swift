import Foundation
import Synchronization

/// A service's availability as its clients hear it.
public enum DBusServiceEvent: Sendable, CustomStringConvertible {
    /// The name has an owner: first seen, come onto the bus, or changed hands (a new
    /// process: whatever the old one held is gone). `connection` reaches it.
    case appeared(owner: String, connection: DBusConnection)
    /// The name has no owner now, or the bus cannot be reached.
    case vanished(DBusServiceAbsence)

    public var description: String {
        switch self {
        case .appeared(let owner, _): "appeared (\(owner))"
        case .vanished(let why): "vanished (\(why))"
        }
    }
}

/// Why a service is not there.
public enum DBusServiceAbsence: Sendable, Equatable, CustomStringConvertible {
    /// The bus is there; nobody owns the name (not running, stopped, not yet activated).
    case notOnBus
    /// The bus cannot be reached, or the connection to it was lost.
    case noBus(DBusError)

    public var description: String {
        switch self {
        case .notOnBus: "not on the bus"
        case .noBus(let error): "\(error)"
        }
    }
}

/// A service on a bus as its clients use it: a well-known name, the connection that
/// reaches it, and its comings and goings. The seam the D-Bus clients are written against.
public protocol DBusServiceWatching: AnyObject, Sendable {
    var name: String { get }
    var bus: DBusBus { get }
    /// The connection to the service's bus now (made when there is none). Calls to an
    /// activatable service that is not running start it, as with any D-Bus client.
    func connection() throws(DBusError) -> DBusConnection
    /// Tells `handler` the service's availability once it is known, then each change,
    /// exactly once: owner gone or the bus lost → `.vanished`; an owner come, changed, or
    /// found again after the bus came back → `.appeared`. Ends with the registration.
    func follow(_ handler: @escaping @Sendable (DBusServiceEvent) -> Void) -> DBusRegistration
}

/// A service by bus and name over a `DBusLink` (the process's shared one for the bus
/// unless the client brings its own): its owner followed through `NameOwnerChanged` and
/// asked once with `GetNameOwner` on each connection, so that a client hears of a restart, a stop and
/// the bus's loss and return each once, and never polls (docs/dbus.md).
public final class DBusService: DBusServiceWatching {
    public let name: String
    public let link: DBusLink
    public var bus: DBusBus { link.bus }

    public init(_ name: String, on link: DBusLink) {
        self.name = name
        self.link = link
    }

    /// `name` over the process's shared link to `bus`.
    public convenience init(_ name: String, bus: DBusBus) {
        self.init(name, on: .shared(bus))
    }

    public func connection() throws(DBusError) -> DBusConnection {
        try link.connection()
    }

    public func follow(_ handler: @escaping @Sendable (DBusServiceEvent) -> Void) -> DBusRegistration {
        let follower = OwnerFollower(name: name, report: handler)
        let linked = link.follow { event in follower.linkChanged(event) }
        // Following keeps the link, and so its connection, until it ends.
        return DBusRegistration { [link] in
            linked.cancel()
            follower.end()
            withExtendedLifetime(link) {}
        }
    }
}

/// One client's view of a name's owner across connections: reports only changes.
private final class OwnerFollower: Sendable {
    private let name: String
    private let report: Mutex<(@Sendable (DBusServiceEvent) -> Void)?>
    private let state = Mutex(State())

    private struct State {
        /// nil: nothing reported yet; .some(nil): reported absent.
        var owner: String??
        var connection: DBusConnection?
        var subscription: DBusRegistration?
    }

    init(name: String, report: @escaping @Sendable (DBusServiceEvent) -> Void) {
        self.name = name
        self.report = Mutex(report)
    }

    func end() {
        report.withLock { $0 = nil }
        let subscription = state.withLock { s -> DBusRegistration? in
            s.connection = nil
            return s.subscription.take()
        }
        subscription?.cancel()
    }

    func linkChanged(_ event: DBusLinkEvent) {
        switch event {
        case .lost(let error):
            let old = state.withLock { s -> DBusRegistration? in
                s.connection = nil
                return s.subscription.take()
            }
            // The lost connection freed its subscriptions with it; this only forgets them.
            old?.cancel()
            changed(to: nil, on: nil, absence: .noBus(error))
        case .connected(let connection):
            follow(on: connection)
        }
    }

    /// Subscribes first and then asks, so that no change falls between the two; the
    /// answers and signals arrive in the bus's order on the bus thread.
    private func follow(on connection: DBusConnection) {
        let known = state.withLock { s -> Bool in
            defer { s.connection = connection }
            return s.connection === connection
        }
        if known { return }
        let name = self.name
        let subscription: DBusRegistration
        do {
            subscription = try connection.subscribe(.nameOwnerChanged(name)) { [weak self, weak connection] message in
                guard let self, let connection, message.arguments.count == 3, message.arguments[0].string == name,
                      let owner = message.arguments[2].string else { return }
                changed(to: owner.isEmpty ? nil : owner, on: connection, absence: .notOnBus)
            }
        } catch {
            changed(to: nil, on: nil, absence: .noBus(error))
            return
        }
        let stale = state.withLock { s -> DBusRegistration? in
            guard s.connection === connection else { return subscription }
            s.subscription = subscription
            return nil
        }
        if let stale { return stale.cancel() }
        connection.call(DBusMethodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                       interface: "org.freedesktop.DBus", member: "GetNameOwner",
                                       arguments: [.string(name)]), timeout: 10) { [weak self, weak connection] result in
            guard let self, let connection else { return }
            switch result {
            case .success(let values):
                changed(to: values.first?.string, on: connection, absence: .notOnBus)
            case .failure(let error) where error.isServiceMissing:
                changed(to: nil, on: connection, absence: .notOnBus)
            case .failure(let error):
                changed(to: nil, on: connection, absence: .noBus(error))
            }
        }
    }

    /// Reports when the owner is another than the one last reported; `on`: the connection
    /// the news came over (a stale connection's news is dropped).
    private func changed(to owner: String?, on connection: DBusConnection?, absence: DBusServiceAbsence) {
        let event = state.withLock { s -> DBusServiceEvent? in
            if let connection, s.connection !== connection { return nil }
            if case .some(let reported) = s.owner, reported == owner { return nil }
            guard let owner else {
                s.owner = .some(nil)
                return .vanished(absence)
            }
            guard let current = s.connection else { return nil }
            s.owner = .some(owner)
            return .appeared(owner: owner, connection: current)
        }
        guard let event else { return }
        report.withLock { $0 }?(event)
    }
}
