/// A D-Bus match rule for signals (the bus daemon's syntax), built from the fields that
/// are set.
public struct DBusMatchRule: Sendable, Equatable {
    public var sender: String?
    public var path: String?
    public var interface: String?
    public var member: String?
    /// The first argument as a string (`arg0`): NameOwnerChanged for one name, say.
    public var arg0: String?

    public init(sender: String? = nil, path: String? = nil, interface: String? = nil, member: String? = nil, arg0: String? = nil) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arg0 = arg0
    }

    /// A service's name coming, going or changing hands on the bus (it started, ended or
    /// restarted).
    public static func nameOwnerChanged(_ name: String) -> DBusMatchRule {
        DBusMatchRule(sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                      member: "NameOwnerChanged", arg0: name)
    }

    /// Property changes of one object's interface.
    public static func propertiesChanged(sender: String, path: String) -> DBusMatchRule {
        DBusMatchRule(sender: sender, path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")
    }

    public var text: String {
        var parts = ["type='signal'"]
        for (key, value) in [("sender", sender), ("path", path), ("interface", interface), ("member", member), ("arg0", arg0)] {
            if let value { parts.append("\(key)='\(value.replacingOccurrences(of: "'", with: "'\\''"))'") }
        }
        return parts.joined(separator: ",")
    }
}
