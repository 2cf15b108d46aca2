import DBus
import Foundation
import Logging
import Synchronization

/// NetworkManager's word on whether the connection costs by the byte (its `NMMetered`:
/// the `Metered` property of org.freedesktop.NetworkManager).
public enum NetworkMetering: Int, Sendable, Equatable {
    case unknown = 0
    case yes = 1
    case no = 2
    case guessYes = 3
    case guessNo = 4

    /// Any value NetworkManager may add later reads as `unknown`: today's behaviour.
    public init(networkManagerValue value: Int) {
        self = NetworkMetering(rawValue: value) ?? .unknown
    }

    /// A guess counts: NetworkManager guesses "yes" for a phone's hotspot or a mobile modem,
    /// which is what costs.
    public var isMetered: Bool { self == .yes || self == .guessYes }

    /// As NetworkManager's own tools say it (`nmcli`): for the log and `status`.
    public var word: String {
        switch self {
        case .unknown: "unknown"
        case .yes: "yes"
        case .no: "no"
        case .guessYes: "guess-yes"
        case .guessNo: "guess-no"
        }
    }
}

/// What a metered watch reports: what the connection is, or why nobody can say.
public enum MeteredNetworkState: Sendable, Equatable {
    case watched(by: String, NetworkMetering)
    /// No one says (NetworkManager is not running, no system bus): uploads treat the
    /// connection as unmetered, as without the watch.
    case unwatched(reason: String)

    public var isMetered: Bool {
        if case .watched(_, let metering) = self { return metering.isMetered }
        return false
    }
}

/// Tells whether the connection is metered, and when that changes, without polling
/// (docs/laptop.md#metered-networks). The daemon hands what it hears to the uploader.
public protocol MeteredNetworkWatch: AnyObject, Sendable {
    /// Starts watching. The first state is reported before this returns when it can be had
    /// at once (the uploader's first cycle goes right after), then every change, on the
    /// watch's own thread.
    func start(report: @escaping @Sendable (MeteredNetworkState) -> Void)
    /// Ends the watch; nothing is reported after it returns.
    func stop()
}

/// The watch on NetworkManager over the system bus: `Metered` read once at start, then
/// followed by its PropertiesChanged signal; NetworkManager leaving or joining the bus
/// (NameOwnerChanged) is taken up. The connection's thread (`ariata-metered`) sleeps in
/// poll(2) with no time-out between signals, so an idle daemon does not wake for it.
public final class NetworkManagerMeteredWatch: MeteredNetworkWatch {
    public static let service = "org.freedesktop.NetworkManager"
    public static let path = "/org/freedesktop/NetworkManager"
    public static let interface = "org.freedesktop.NetworkManager"
    public static let name = "NetworkManager"

    private let bus: DBusBus
    private let logger: Logger
    /// How long `start` waits for the first answer (NetworkManager's, or the bus's that it
    /// is not there: both come at once unless the system is very busy).
    private let firstAnswerWait: TimeInterval
    private let running = Mutex<Running?>(nil)

    private struct Running {
        let connection: DBusConnection
        let subscriptions: [DBusRegistration]
        let gate: ReportGate
    }

    /// Reports until stopped, so nothing reaches the daemon after `stop()`.
    private final class ReportGate: Sendable {
        private let report: Mutex<(@Sendable (MeteredNetworkState) -> Void)?>
        init(_ report: @escaping @Sendable (MeteredNetworkState) -> Void) { self.report = Mutex(report) }
        func callAsFunction(_ state: MeteredNetworkState) { report.withLock { $0 }?(state) }
        func close() { report.withLock { $0 = nil } }
    }

    public init(bus: DBusBus = .system, logger: Logger, firstAnswerWait: TimeInterval = 3) {
        self.bus = bus
        self.logger = logger
        self.firstAnswerWait = firstAnswerWait
    }

    public func start(report: @escaping @Sendable (MeteredNetworkState) -> Void) {
        stop()
        let gate = ReportGate(report)
        let connection: DBusConnection
        do {
            connection = try DBusConnection(bus, threadName: "ariata-metered")
        } catch {
            gate(.unwatched(reason: "\(error)"))
            return
        }
        connection.onLost { reason in gate(.unwatched(reason: "the system bus connection was lost (\(reason)); metering is read again at the next start or reload")) }
        let subscriptions: [DBusRegistration]
        do {
            // Signals first, then the reading, so that no change falls between the two.
            subscriptions = [
                try connection.subscribe(.nameOwnerChanged(Self.service)) { [weak connection] message in
                    guard message.arguments.count == 3, let owner = message.arguments[2].string else { return }
                    if owner.isEmpty {
                        gate(.unwatched(reason: "\(Self.name) left the system bus"))
                    } else if let connection {
                        Self.read(on: connection, into: gate)
                    }
                },
                try connection.subscribe(.propertiesChanged(sender: Self.service, path: Self.path)) { message in
                    guard let change = DBusPropertiesChange(message), change.interface == Self.interface,
                          let value = change.changed["Metered"]?.int else { return }
                    gate(.watched(by: Self.name, NetworkMetering(networkManagerValue: value)))
                },
                // Older NetworkManager releases also announced changes with a signal of their
                // own interface (a{sv}), and python-dbusmock's template sends only that one.
                try connection.subscribe(DBusMatchRule(sender: Self.service, path: Self.path, interface: Self.interface,
                                                       member: "PropertiesChanged")) { message in
                    guard let value = message.arguments.first?.dictionary?["Metered"]?.int else { return }
                    gate(.watched(by: Self.name, NetworkMetering(networkManagerValue: value)))
                },
            ]
        } catch {
            gate(.unwatched(reason: "cannot follow \(Self.name) on the system bus: \(error)"))
            connection.close()
            return
        }
        running.withLock { $0 = Running(connection: connection, subscriptions: subscriptions, gate: gate) }
        let first = DispatchSemaphore(value: 0)
        Self.read(on: connection, into: gate) { first.signal() }
        if first.wait(timeout: .now() + firstAnswerWait) == .timedOut {
            logger.info("\(Self.name) has not said within \(Int(firstAnswerWait)) s whether the connection is metered; uploads go as on any network until it does")
        }
    }

    public func stop() {
        guard let old = running.withLock({ $0.take() }) else { return }
        old.gate.close()
        for subscription in old.subscriptions { subscription.cancel() }
        old.connection.close()
    }

    /// Asks for `Metered`; the answer is reported on the bus thread, in order with the signals.
    private static func read(on connection: DBusConnection, into gate: ReportGate, then done: @escaping @Sendable () -> Void = {}) {
        let get = DBusMethodCall(destination: service, path: path, interface: DBusConnection.propertiesInterface,
                                 member: "Get", arguments: [.string(interface), .string("Metered")])
        connection.call(get, timeout: 10) { result in
            defer { done() }
            switch result {
            case .success(let values):
                guard let value = values.first?.int else {
                    return gate(.unwatched(reason: "\(name) answered Metered with \(values), not a number"))
                }
                gate(.watched(by: name, NetworkMetering(networkManagerValue: value)))
            case .failure(let error) where error.isServiceMissing:
                gate(.unwatched(reason: "\(name) is not running on the system bus"))
            case .failure(let error):
                gate(.unwatched(reason: "\(name) does not say whether the connection is metered: \(error)"))
            }
        }
    }
}
