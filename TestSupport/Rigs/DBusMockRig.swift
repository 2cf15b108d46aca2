import Foundation

/// A python-dbusmock template on a `DBusRig`'s bus (NetworkManager on a system bus, the
/// notification daemon on a session bus), driven and read through its
/// org.freedesktop.DBus.Mock interface with `busctl`: the service a program talks to is a
/// real D-Bus service on a real bus daemon, only its behaviour is scripted. The
/// templates are in /usr/lib/python3/dist-packages/dbusmock/templates/.
public final class DBusMockRig: @unchecked Sendable {
    // Touched from the test's thread only.
    public let bus: DBusRig
    public let template: String
    /// The bus name the template owns and its main object.
    public let name: String
    public let path: String
    private var process: ChildProcess?
    /// NetworkManager: whether `Metered` was added to the template's manager object.
    private var meteredAdded = false

    /// Debian's python3, which has python3-dbusmock (a python3 earlier on PATH may not).
    public static let python = "/usr/bin/python3"

    /// Starts the template and waits until it owns `name`.
    public init(template: String, name: String, path: String, on bus: DBusRig) throws {
        self.bus = bus
        self.template = template
        self.name = name
        self.path = path
        try start()
    }

    deinit { stop() }

    /// Starts it (again): `name` appears on the bus.
    public func start() throws {
        guard process == nil else { return }
        guard FileManager.default.isExecutableFile(atPath: Self.python) else { throw NotInstalled(program: Self.python) }
        meteredAdded = false
        process = try bus.start(Self.python, ["-m", "dbusmock"] + (bus.kind == .system ? ["--system"] : []) + ["--template", template],
                                owning: name)
    }

    /// Stops it: `name` leaves the bus.
    public func stop() {
        guard let process else { return }
        bus.stop(process)
        self.process = nil
    }

    /// Calls `member` of the mock interface (or `interface`) on `object` (the main one by
    /// default) with busctl's typed arguments; returns the answer's values as busctl's JSON.
    @discardableResult
    public func call(_ member: String, _ signature: String = "", _ arguments: [String] = [],
                     interface: String = "org.freedesktop.DBus.Mock", object: String? = nil) throws -> [Any] {
        let output = try bus.busctl(["--json=short", "call", "--", name, object ?? path, interface, member]
                                    + (signature.isEmpty ? [] : [signature] + arguments))
        guard !output.isEmpty else { return [] }
        guard let answer = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any],
              let data = answer["data"] as? [Any] else {
            throw RigFailure("busctl answered \(member) with \(output)")
        }
        return data
    }

    /// The arguments of every recorded call of `method`, oldest first, each as its value
    /// (busctl's JSON: strings, numbers, arrays, dictionaries). Each object keeps its own
    /// log: `object` (the main one by default) is the one called.
    public func calls(of method: String, object: String? = nil) throws -> [[Any]] {
        let answer = try call("GetMethodCalls", "s", [method], object: object)
        guard let list = answer.first as? [[Any]] else { throw RigFailure("GetMethodCalls answered \(answer)") }
        return list.map { call in
            let arguments = call.count > 1 ? (call[1] as? [[String: Any]] ?? []) : []
            return arguments.map { $0["data"] ?? NSNull() }
        }
    }
}

// MARK: NetworkManager

extension DBusMockRig {
    public static let networkManagerName = "org.freedesktop.NetworkManager"
    public static let networkManagerPath = "/org/freedesktop/NetworkManager"

    /// NetworkManager on a system bus rig, with `Metered` set (NMMetered: 0 unknown, 1 yes,
    /// 2 no, 3 guess-yes, 4 guess-no) unless nil.
    public static func networkManager(on bus: DBusRig, metered: UInt32? = nil) throws -> DBusMockRig {
        let rig = try DBusMockRig(template: "networkmanager", name: networkManagerName, path: networkManagerPath, on: bus)
        if let metered { try rig.setMetered(metered) }
        return rig
    }

    /// Sets `Metered`, with the PropertiesChanged signal NetworkManager sends (the first time
    /// it only adds the property, which the template lacks: no signal).
    public func setMetered(_ value: UInt32) throws {
        if meteredAdded {
            try call("UpdateProperties", "sa{sv}", [Self.networkManagerName, "1", "Metered", "u", String(value)])
        } else {
            try call("AddProperty", "ssv", [Self.networkManagerName, "Metered", "u", String(value)])
            meteredAdded = true
        }
    }
}

// MARK: The notification daemon

extension DBusMockRig {
    /// One `Notify` the notification daemon received.
    public struct Notification: Sendable, Equatable {
        public var appName: String
        public var summary: String
        public var body: String
        /// The `urgency` hint (0 low, 1 normal, 2 critical), when given.
        public var urgency: Int?

        public init(appName: String, summary: String, body: String, urgency: Int?) {
            self.appName = appName
            self.summary = summary
            self.body = body
            self.urgency = urgency
        }
    }

    /// The notification daemon on a session bus rig.
    public static func notificationDaemon(on bus: DBusRig) throws -> DBusMockRig {
        try DBusMockRig(template: "notification_daemon", name: "org.freedesktop.Notifications",
                        path: "/org/freedesktop/Notifications", on: bus)
    }

    /// Every notice received, oldest first.
    public func notifications() throws -> [Notification] {
        try calls(of: "Notify").map { arguments in
            guard arguments.count == 8, let app = arguments[0] as? String, let summary = arguments[3] as? String,
                  let body = arguments[4] as? String else {
                throw RigFailure("a Notify call of another shape: \(arguments)")
            }
            let hints = arguments[6] as? [String: Any]
            let urgency = (hints?["urgency"] as? [String: Any])?["data"] as? Int
            return Notification(appName: app, summary: summary, body: body, urgency: urgency)
        }
    }
}

// MARK: logind

extension DBusMockRig {
    public static let logindName = "org.freedesktop.login1"
    public static let logindPath = "/org/freedesktop/login1"

    /// systemd-logind on a system bus rig: `Inhibit` hands out a real file descriptor (and
    /// `ListInhibitors` lists the lock until it is closed); the test sends `PrepareForSleep`
    /// as logind does around a suspend.
    public static func logind(on bus: DBusRig) throws -> DBusMockRig {
        try DBusMockRig(template: "logind", name: logindName, path: logindPath, on: bus)
    }

    /// Whether `who` holds a delay lock on sleep now.
    public func holdsSleepDelay(_ who: String = "ariata-agent") throws -> Bool {
        let answer = try call("ListInhibitors", interface: "org.freedesktop.login1.Manager")
        let locks = answer.first as? [[Any]] ?? []
        return locks.contains { lock in
            lock.count >= 4 && lock[0] as? String == "sleep" && lock[1] as? String == who && lock[3] as? String == "delay"
        }
    }

    /// logind's signal before a suspend (true) and after the resume (false).
    public func prepareForSleep(_ going: Bool) throws {
        try call("EmitSignal", "sssav", ["org.freedesktop.login1.Manager", "PrepareForSleep", "b", "1", "b", going ? "true" : "false"])
    }
}
