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

/// What a metered watch reports: what NetworkManager says of the way out, or why nobody
/// can say.
public enum MeteredNetworkState: Sendable, Equatable {
    case watched(MeteredNetworkReading)
    /// No one says (NetworkManager is not running, no system bus): uploads treat the
    /// connection as unmetered, as without the watch.
    case unwatched(reason: String)

    public var reading: MeteredNetworkReading? {
        if case .watched(let reading) = self { return reading }
        return nil
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

/// The watch on NetworkManager over the system bus: the way out read at start
/// (`NetworkManagerRoute`: the global `Metered`, the primary connection, the devices under
/// it, through a VPN), then again when NetworkManager says something of it changed (its
/// own properties, a device's `Metered` or active connection), and when it comes, goes or
/// restarts, or the bus is lost and back (NetworkManager as a `DBusService`). The process's
/// shared system-bus connection carries it, whose thread sleeps in poll(2) with no time-out
/// between signals, so an idle daemon does not wake for it; the reading's blocking calls
/// run on a Dispatch queue, never on the bus thread, and the readings asked for while one
/// runs make one more.
public final class NetworkManagerMeteredWatch: MeteredNetworkWatch {
    public static let service = NetworkManagerRoute.service
    public static let path = NetworkManagerRoute.managerPath
    public static let interface = NetworkManagerRoute.managerInterface
    public static let name = "NetworkManager"
    /// The properties whose change can change the answer; others (a device's statistics,
    /// the connectivity check) are let pass without a reading.
    static let relevant: Set<String> = ["Metered", "PrimaryConnection", "ActiveConnections", "ActiveConnection", "Devices",
                                        "SpecificObject"]

    private let service: any DBusServiceWatching
    private let logger: Logger
    /// How long `start` waits for the first answer (NetworkManager's, or the bus's that it
    /// is not there: both come at once unless the system is very busy).
    private let firstAnswerWait: TimeInterval
    private let running = Mutex<Running?>(nil)
    private let queue = DispatchQueue(label: "ariata.metered.read")

    private final class Running: Sendable {
        let gate: ReportGate
        let following = Mutex<DBusRegistration?>(nil)
        /// Whether NetworkManager's first word came (the reading at start answers it).
        let heardFirst = Mutex(false)
        /// The change signals, on the connection they were subscribed on.
        let signals = Mutex<(connection: DBusConnection, registrations: [DBusRegistration])?>(nil)
        init(gate: ReportGate) { self.gate = gate }

        func end() {
            gate.close()
            following.withLock { $0.take() }?.cancel()
            signals.withLock { $0.take() }?.registrations.forEach { $0.cancel() }
        }
    }

    /// Reports until stopped, so nothing reaches the daemon after `stop()`; and coalesces
    /// the readings asked for while one waits to run.
    private final class ReportGate: Sendable {
        private let report: Mutex<(@Sendable (MeteredNetworkState) -> Void)?>
        let readQueued = Mutex(false)
        init(_ report: @escaping @Sendable (MeteredNetworkState) -> Void) { self.report = Mutex(report) }
        func callAsFunction(_ state: MeteredNetworkState) { report.withLock { $0 }?(state) }
        func close() { report.withLock { $0 = nil } }
        var isOpen: Bool { report.withLock { $0 != nil } }
    }

    public convenience init(bus: DBusBus = .system, logger: Logger, firstAnswerWait: TimeInterval = 3) {
        self.init(service: DBusService(Self.service, bus: bus), logger: logger, firstAnswerWait: firstAnswerWait)
    }

    public init(service: any DBusServiceWatching, logger: Logger, firstAnswerWait: TimeInterval = 3) {
        self.service = service
        self.logger = logger
        self.firstAnswerWait = firstAnswerWait
    }

    public func start(report: @escaping @Sendable (MeteredNetworkState) -> Void) {
        stop()
        let gate = ReportGate(report)
        let connection: DBusConnection
        do {
            connection = try service.connection()
        } catch {
            gate(.unwatched(reason: "\(error)"))
            return
        }
        let running = Running(gate: gate)
        // Signals first, then the reading, so that no change falls between the two.
        do {
            try subscribe(on: connection, for: running)
        } catch {
            gate(.unwatched(reason: "cannot follow \(Self.name) on the system bus: \(error)"))
            return
        }
        self.running.withLock { $0 = running }
        // The first word is the reading's own; then each change of NetworkManager's presence.
        let queue = queue
        let following = service.follow { [weak self, weak running] event in
            guard let self, let running, running.heardFirst.withLock({ h in defer { h = true }; return h }) else { return }
            switch event {
            case .appeared(_, let connection):
                do {
                    try subscribe(on: connection, for: running)
                    read(on: connection, into: running.gate)
                } catch {
                    queue.async { running.gate(.unwatched(reason: "cannot follow \(Self.name) on the system bus: \(error)")) }
                }
            case .vanished(.notOnBus):
                queue.async { running.gate(.unwatched(reason: "\(Self.name) left the system bus")) }
            case .vanished(.noBus(let reason)):
                queue.async { running.gate(.unwatched(reason: "the system bus connection was lost (\(reason)); metering is read again once it is back")) }
            }
        }
        running.following.withLock { $0 = following }
        let first = DispatchSemaphore(value: 0)
        read(on: connection, into: gate) { first.signal() }
        if first.wait(timeout: .now() + firstAnswerWait) == .timedOut {
            logger.info("\(Self.name) has not said within \(Int(firstAnswerWait)) s whether the connection is metered; uploads go as on any network until it does")
        }
    }

    public func stop() {
        running.withLock { $0.take() }?.end()
    }

    /// The change signals on `connection` unless they are there already (a new connection
    /// after the bus was lost needs them again).
    private func subscribe(on connection: DBusConnection, for running: Running) throws(DBusError) {
        if running.signals.withLock({ $0?.connection === connection }) { return }
        let gate = running.gate
        let changed: @Sendable (DBusMessage) -> Void = { [weak self, weak connection] message in
            guard let self, let connection, let change = DBusPropertiesChange(message),
                  !Self.relevant.isDisjoint(with: change.changed.keys) else { return }
            read(on: connection, into: gate)
        }
        let registrations = [
            try connection.subscribe(.propertiesChanged(sender: Self.service, path: Self.path), handler: changed),
            // A device's Metered or active connection, whichever device: only this
            // interface's changes, not its access points' signal strengths.
            try connection.subscribe(DBusMatchRule(sender: Self.service, interface: DBusConnection.propertiesInterface,
                                                   member: "PropertiesChanged", arg0: NetworkManagerRoute.deviceInterface),
                                     handler: changed),
            // Older NetworkManager releases also announced changes with a signal of their
            // own interface (a{sv}), and python-dbusmock's template sends only that one.
            try connection.subscribe(DBusMatchRule(sender: Self.service, path: Self.path, interface: Self.interface,
                                                   member: "PropertiesChanged")) { [weak self, weak connection] message in
                guard let self, let connection, let changed = message.arguments.first?.dictionary,
                      !Self.relevant.isDisjoint(with: changed.keys) else { return }
                read(on: connection, into: gate)
            },
        ]
        let old = running.signals.withLock { s -> [DBusRegistration] in
            defer { s = (connection, registrations) }
            return s?.registrations ?? []
        }
        old.forEach { $0.cancel() }
    }

    /// Reads the way out on the queue (one reading at a time; those asked for while one
    /// waits to run are the same one) and reports it.
    private func read(on connection: DBusConnection, into gate: ReportGate, then done: @escaping @Sendable () -> Void = {}) {
        let queued = gate.readQueued.withLock { queued -> Bool in
            defer { queued = true }
            return queued
        }
        if queued { return done() }
        queue.async {
            gate.readQueued.withLock { $0 = false }
            defer { done() }
            guard gate.isOpen else { return }
            switch NetworkManagerRoute(connection: connection, timeout: 10).read() {
            case .success(let reading):
                gate(.watched(reading))
            case .failure(.absent):
                gate(.unwatched(reason: "\(Self.name) is not running on the system bus"))
            case .failure(.failed(let error)):
                gate(.unwatched(reason: "\(Self.name) does not say whether the connection is metered: \(error)"))
            }
        }
    }
}
