import AgentCore
import DBus
import Foundation
import Platform
import Synchronization

/// What the location stream asks of GeoClue.
struct GeoClueSettings: Sendable, Equatable {
    /// The desktop id GeoClue knows the agent by (its configuration's app and agent
    /// whitelist entries).
    static let desktopID = "ariata-agent"

    var accuracy: LocationConfig.AccuracyLevel
    /// Seconds GeoClue waits at least between two fixes.
    var timeThreshold: UInt32
    var distanceThreshold: UInt32
    /// As the system service there is no desktop to authorize the agent: it registers as
    /// its own GeoClue agent. As a user service the desktop's agent does (docs/laptop.md).
    var actsAsItsOwnAgent: Bool
    /// GeoClue answers `CreateClient` only once an agent for the user is there: as a user
    /// service without a desktop agent it never does.
    var startTimeout: TimeInterval = 25
}

/// Why GeoClue gives no fixes, worded for `status` with what to do.
public enum GeoClueProblem: Error, Equatable, Sendable, CustomStringConvertible {
    case noBus(String)
    case notInstalled
    case agentNotAllowed
    case notAuthorized(String)
    case noDesktopAgent
    case failed(String)
    case gone

    public var description: String {
        switch self {
        case .noBus(let detail):
            return "cannot reach the system bus for GeoClue (\(detail)); is dbus running?"
        case .notInstalled:
            return "GeoClue is not on the system bus: install it (apt install geoclue-2.0) or set [location] source = \"gpsd\""
        case .agentNotAllowed:
            return "GeoClue does not let ariata-agent act as its own agent: add ariata-agent to whitelist in the [agent] "
                + "section of /etc/geoclue/geoclue.conf (Debian 12) or run `ariata-agent onboard` again to write "
                + "/etc/geoclue/conf.d/90-ariata-agent.conf (Debian 13), then restart geoclue (docs/laptop.md)"
        case .notAuthorized(let detail):
            return "GeoClue refuses location to ariata-agent (\(detail)): turn location services on in the desktop's "
                + "privacy settings, or allow ariata-agent there (docs/laptop.md)"
        case .noDesktopAgent:
            return "GeoClue waits for the desktop's location agent, and none is running for this user: in a desktop "
                + "session (GNOME, KDE) turn location services on; without a desktop, run the agent as the system "
                + "service, which is its own GeoClue agent (docs/laptop.md)"
        case .failed(let detail):
            return "GeoClue failed: \(detail)"
        case .gone:
            return "GeoClue left the system bus (stopped or restarted); asking it again"
        }
    }
}

/// A GeoClue client on the process's shared system-bus connection (GeoClue as a
/// `DBusService`): registers as GeoClue's agent when it must, creates a client of its own
/// with the settings, follows `LocationUpdated` and reads each new Location, and deletes
/// the client when it closes. The connection outlives the session, so the client is
/// created and deleted, not left for GeoClue to drop with the connection (a client asked
/// for with `GetClient` would be the same one each time, and keep the last fix's
/// thresholds). GeoClue pushes fixes; nothing here wakes between them.
public final class GeoClueSession: Sendable {
    public static let service = "org.freedesktop.GeoClue2"
    public static let managerPath = "/org/freedesktop/GeoClue2/Manager"
    static let agentPath = "/org/freedesktop/GeoClue2/Agent"

    /// GeoClue on the bus: holding it keeps the shared connection while the session lasts.
    private let geoClue: DBusService
    private let connection: DBusConnection
    private let following = Mutex<DBusRegistration?>(nil)
    /// GeoClue's owner on the bus, once seen: another one is a restarted GeoClue.
    private let owner = Mutex<String?>(nil)
    private let registrations = Mutex<[DBusRegistration]>([])
    private let clientPath = Mutex<String?>(nil)
    /// Woken once the session is of no more use (GeoClue gone or restarted, the bus lost):
    /// the reader's loop sleeps on it and opens a new one.
    let ended: Waker

    /// Starts GeoClue's client; `onFix` runs on the bus thread for each fix.
    init(bus: DBusBus, settings: GeoClueSettings, onFix: @escaping @Sendable (GeoClueFix) -> Void) throws(GeoClueProblem) {
        geoClue = DBusService(Self.service, bus: bus)
        do {
            connection = try geoClue.connection()
            ended = try Waker()
        } catch let error as DBusError {
            throw .noBus(error.description)
        } catch {
            throw .noBus("\(error)")
        }
        do {
            try begin(settings, service: geoClue, onFix: onFix)
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    func close() {
        following.withLock { $0.take() }?.cancel()
        if let path = clientPath.withLock({ $0.take() }), connection.lostReason == nil {
            _ = try? connection.call(DBusMethodCall(destination: Self.service, path: path,
                                                    interface: "org.freedesktop.GeoClue2.Client", member: "Stop"), timeout: 2)
            _ = try? connection.call(DBusMethodCall(destination: Self.service, path: Self.managerPath,
                                                    interface: "org.freedesktop.GeoClue2.Manager", member: "DeleteClient",
                                                    arguments: [.objectPath(path)]), timeout: 2)
        }
        for registration in registrations.withLock({ r -> [DBusRegistration] in defer { r = [] }; return r }) {
            registration.cancel()
        }
        ended.wake()
    }

    private func begin(_ settings: GeoClueSettings, service: DBusService,
                       onFix: @escaping @Sendable (GeoClueFix) -> Void) throws(GeoClueProblem) {
        let ended = self.ended
        // GeoClue leaving or replaced by a new process ends this session's client, as does
        // the bus lost. Not yet running is no end: the first call starts it.
        let following = service.follow { [weak self] event in
            guard let self else { return }
            switch event {
            case .appeared(let owner, _):
                let before = self.owner.withLock { s -> String? in defer { s = owner }; return s }
                if before != nil { ended.wake() }
            case .vanished(.notOnBus):
                if self.owner.withLock({ $0 }) != nil { ended.wake() }
            case .vanished(.noBus):
                ended.wake()
            }
        }
        self.following.withLock { $0 = following }
        if settings.actsAsItsOwnAgent { try registerAsAgent(settings) }

        let client: String
        do {
            let answer = try connection.call(DBusMethodCall(destination: Self.service, path: Self.managerPath,
                                                            interface: "org.freedesktop.GeoClue2.Manager", member: "CreateClient"),
                                             timeout: settings.startTimeout)
            guard let path = answer.first?.string else { throw GeoClueProblem.failed("CreateClient gave no client") }
            client = path
        } catch let error as DBusError where !settings.actsAsItsOwnAgent && error.isNoReply {
            throw .noDesktopAgent
        } catch {
            throw Self.problem(error)
        }
        clientPath.withLock { $0 = client }
        let clientInterface = "org.freedesktop.GeoClue2.Client"
        do throws(DBusError) {
            for (name, value) in [("DesktopId", DBusValue.string(GeoClueSettings.desktopID)),
                                  ("RequestedAccuracyLevel", .uint32(settings.accuracy.geoClueValue)),
                                  ("TimeThreshold", .uint32(settings.timeThreshold)),
                                  ("DistanceThreshold", .uint32(settings.distanceThreshold))] {
                try connection.setProperty(name, of: clientInterface, at: client, on: Self.service, to: value)
            }
        } catch {
            throw Self.problem(error)
        }
        let connection = self.connection
        try keep(connection.subscribe(DBusMatchRule(sender: Self.service, path: client, interface: clientInterface,
                                                    member: "LocationUpdated")) { message in
            guard message.arguments.count == 2, let location = message.arguments[1].string, location != "/" else { return }
            // On the bus thread: read the new Location without blocking it.
            connection.call(DBusMethodCall(destination: Self.service, path: location, interface: DBusConnection.propertiesInterface,
                                           member: "GetAll", arguments: [.string("org.freedesktop.GeoClue2.Location")])) { result in
                guard case .success(let values) = result, let properties = values.first?.dictionary,
                      let fix = GeoClueFix(properties: properties) else { return }
                onFix(fix)
            }
        })
        do {
            _ = try connection.call(DBusMethodCall(destination: Self.service, path: client, interface: clientInterface, member: "Start"))
        } catch {
            throw Self.problem(error)
        }
    }

    /// Exports the agent object GeoClue asks (`MaxAccuracyLevel`, `AuthorizeApp`) and
    /// registers it. GeoClue reads the object's properties before it answers `AddAgent`:
    /// the bus thread answers them while this thread waits.
    private func registerAsAgent(_ settings: GeoClueSettings) throws(GeoClueProblem) {
        let agentInterface = "org.freedesktop.GeoClue2.Agent"
        let level = settings.accuracy.geoClueValue
        try keep(connection.export(path: Self.agentPath) { call in
            switch (call.interface, call.member) {
            case (DBusConnection.propertiesInterface, "Get"):
                guard call.arguments.count == 2, call.arguments[1].string == "MaxAccuracyLevel" else {
                    return .error(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no such property")
                }
                return .values([.variant(.uint32(level))])
            case (DBusConnection.propertiesInterface, "GetAll"):
                return .values([.dictionary(call.arguments.first?.string == agentInterface ? ["MaxAccuracyLevel": .uint32(level)] : [:])])
            case (agentInterface, "AuthorizeApp"):
                // Only this agent's own client asks it: allowed, at most the configured level.
                let asked = call.arguments.count == 2 ? UInt32(call.arguments[1].int ?? Int(level)) : level
                return .values([.bool(true), .uint32(min(asked, level))])
            default:
                return .unknown
            }
        })
        do {
            _ = try connection.call(DBusMethodCall(destination: Self.service, path: Self.managerPath,
                                                   interface: "org.freedesktop.GeoClue2.Manager", member: "AddAgent",
                                                   arguments: [.string(GeoClueSettings.desktopID)]))
        } catch {
            throw error.isAccessDenied ? .agentNotAllowed : Self.problem(error)
        }
    }

    private func keep(_ make: @autoclosure () throws(DBusError) -> DBusRegistration) throws(GeoClueProblem) {
        do {
            let registration = try make()
            registrations.withLock { $0.append(registration) }
        } catch {
            throw Self.problem(error)
        }
    }

    private static func problem(_ error: any Error) -> GeoClueProblem {
        if let problem = error as? GeoClueProblem { return problem }
        guard let error = error as? DBusError else { return .failed("\(error)") }
        if error.isServiceMissing { return .notInstalled }
        if error.isAccessDenied, case .remote(_, let message) = error { return .notAuthorized(message) }
        if case .notConnected = error { return .gone }
        return .failed(error.description)
    }
}
