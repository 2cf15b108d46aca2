import Foundation
import Platform

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
    /// The properties the rig added to the template's objects ("path interface name"):
    /// the next setting of one changes it with its signal.
    private var added: Set<String> = []
    /// logind: whether the rig's own property setter was added to this run of the template.
    private var silentSetterAdded = false

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
        added = []
        silentSetterAdded = false
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
        try setProperty("Metered", of: Self.networkManagerName, at: Self.networkManagerPath, type: "u", [String(value)])
    }

    /// Sets a property of one of the template's objects in busctl's typed form (`type`,
    /// then its values), with the standard PropertiesChanged signal; the first time it
    /// only adds a property the template lacks, without a signal.
    public func setProperty(_ name: String, of interface: String, at object: String, type: String, _ value: [String]) throws {
        let key = "\(object) \(interface) \(name)"
        if added.contains(key) {
            // The standard Set, which the template answers with the standard signal (its
            // UpdateProperties cannot carry an object path).
            try call("Set", "ssv", [interface, name, type] + value, interface: "org.freedesktop.DBus.Properties", object: object)
        } else {
            try call("AddProperty", "ssv", [interface, name, type] + value, object: object)
            added.insert(key)
        }
    }

    public static let deviceInterface = "org.freedesktop.NetworkManager.Device"

    /// One connection the rig made: its device, the active connection and its access point.
    public struct NetworkManagerConnection: Sendable {
        public var device: String
        public var active: String
        public var accessPoint: String?
    }

    /// A Wi-Fi device `interface`, associated with an access point `ssid` through a
    /// connection of the same name (NetworkManager names a Wi-Fi profile after its SSID),
    /// the device's own `Metered` set; the default route's (`PrimaryConnection`) when
    /// `primary`. Set up before the watch starts, or followed by `announcePrimary`.
    @discardableResult
    public func addWiFi(interface: String, ssid: String, metered: UInt32, primary: Bool = true) throws -> NetworkManagerConnection {
        let name = interface.filter { $0.isLetter || $0.isNumber }
        let device = try string(call("AddWiFiDevice", "ssi", [name, interface, "100"]))
        let accessPoint = try string(call("AddAccessPoint", "ssssuuuyu", [device, "\(name)ap", ssid, "02:00:00:00:00:01", "2", "2437",
                                                                         "54000", "80", "256"]))
        let profile = try string(call("AddWiFiConnection", "ssss", [device, "\(name)profile", ssid, "wpa-psk"]))
        let active = try string(call("AddActiveConnection", "assssu", ["1", device, profile, accessPoint, "\(name)active", "2"]))
        try setProperty("ActiveAccessPoint", of: "org.freedesktop.NetworkManager.Device.Wireless", at: device, type: "o", [accessPoint])
        try setProperty("Metered", of: Self.deviceInterface, at: device, type: "u", [String(metered)])
        if primary { try setPrimaryConnection(active) }
        return NetworkManagerConnection(device: device, active: active, accessPoint: accessPoint)
    }

    /// A plugin VPN `id` running over `carrier` (its `SpecificObject`, its device in its
    /// `Devices`), holding the default route; NetworkManager's global `Metered` then is
    /// `globalMetered`, what it says of the VPN rather than of the carrier.
    @discardableResult
    public func addVPN(id: String, over carrier: NetworkManagerConnection, globalMetered: UInt32) throws -> String {
        let profile = try string(call("AddConnection", "a{sa{sv}}",
                                      ["1", "connection", "3", "id", "s", id, "type", "s", "vpn", "uuid", "s", UUID().uuidString.lowercased()],
                                      interface: "org.freedesktop.NetworkManager.Settings", object: "/org/freedesktop/NetworkManager/Settings"))
        // No devices at first: the template would make the VPN its device's active connection,
        // which NetworkManager does not (the device keeps its own).
        let active = try string(call("AddActiveConnection", "assssu", ["0", profile, carrier.active, "vpn", "2"]))
        try call("Set", "ssv", ["org.freedesktop.NetworkManager.Connection.Active", "Devices", "ao", "1", carrier.device],
                 interface: "org.freedesktop.DBus.Properties", object: active)
        try setMetered(globalMetered)
        try setPrimaryConnection(active)
        return active
    }

    /// The connection that holds the default route.
    public func setPrimaryConnection(_ active: String) throws {
        try setProperty("PrimaryConnection", of: Self.networkManagerName, at: Self.networkManagerPath, type: "o", [active])
    }

    /// NetworkManager's signal that the primary connection changed, for a watch that started
    /// before it was first set.
    public func announcePrimary(_ active: String) throws {
        try setPrimaryConnection(active)
        try setPrimaryConnection(active)
    }

    /// A device's own `Metered`, with its signal.
    public func setDeviceMetered(_ device: String, _ value: UInt32) throws {
        try setProperty("Metered", of: Self.deviceInterface, at: device, type: "u", [String(value)])
    }

    private func string(_ answer: [Any]) throws -> String {
        guard let value = answer.first as? String else { throw RigFailure("expected a path, got \(answer)") }
        return value
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

    /// logind around a suspend: `PreparingForSleep` set, then the signal, before the
    /// suspend (true) and after the resume (false), as logind does. Returns when the signal
    /// was sent (monotonic seconds), for a measure that should not count the property's
    /// setting.
    @discardableResult
    public func prepareForSleep(_ going: Bool) throws -> TimeInterval {
        try setPreparingForSleepSilently(going)
        let sent = Monotonic.now
        try call("EmitSignal", "sssav", ["org.freedesktop.login1.Manager", "PrepareForSleep", "b", "1", "b", going ? "true" : "false"])
        return sent
    }

    /// A resume as some systemd releases make it after hibernation: `PreparingForSleep`
    /// turns false, and neither `PrepareForSleep(false)` nor a property change is sent.
    public func resumeWithoutSignal() throws {
        try setPreparingForSleepSilently(false)
    }

    /// The property alone, with no signal at all (the template has no way to, so the
    /// rig adds a method of its own that changes the stored value).
    private func setPreparingForSleepSilently(_ value: Bool) throws {
        if !silentSetterAdded {
            try call("AddMethod", "sssss", [Self.rigInterface, "SetPreparingForSleep", "b", "",
                                            "self.props['org.freedesktop.login1.Manager']['PreparingForSleep'] = args[0]"])
            silentSetterAdded = true
        }
        try call("SetPreparingForSleep", "b", [value ? "true" : "false"], interface: Self.rigInterface)
    }

    /// logind's `PreparingForSleep` now.
    public func preparingForSleep() throws -> Bool {
        let answer = try call("Get", "ss", ["org.freedesktop.login1.Manager", "PreparingForSleep"],
                              interface: "org.freedesktop.DBus.Properties")
        guard let value = (answer.first as? [String: Any])?["data"] as? Bool else {
            throw RigFailure("PreparingForSleep read as \(answer)")
        }
        return value
    }

    private static let rigInterface = "org.ariata.TestRig"
}
