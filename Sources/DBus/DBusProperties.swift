/// `org.freedesktop.DBus.Properties`, the standard interface every service's properties
/// are read and set through.
extension DBusConnection {
    public static let propertiesInterface = "org.freedesktop.DBus.Properties"

    /// All properties of `interface` on the object.
    public func properties(of interface: String, at path: String, on destination: String,
                           timeout: Double = 25) throws(DBusError) -> [String: DBusValue] {
        let answer = try call(DBusMethodCall(destination: destination, path: path, interface: Self.propertiesInterface,
                                             member: "GetAll", arguments: [.string(interface)]), timeout: timeout)
        guard let properties = answer.first?.dictionary else { throw DBusError.malformed("GetAll of \(interface) without a dictionary") }
        return properties
    }

    /// One property.
    public func property(_ name: String, of interface: String, at path: String, on destination: String,
                         timeout: Double = 25) throws(DBusError) -> DBusValue {
        let answer = try call(DBusMethodCall(destination: destination, path: path, interface: Self.propertiesInterface,
                                             member: "Get", arguments: [.string(interface), .string(name)]), timeout: timeout)
        guard let value = answer.first else { throw DBusError.malformed("Get of \(interface).\(name) without a value") }
        return value.unwrapped
    }

    /// Sets one property.
    public func setProperty(_ name: String, of interface: String, at path: String, on destination: String,
                            to value: DBusValue, timeout: Double = 25) throws(DBusError) {
        _ = try call(DBusMethodCall(destination: destination, path: path, interface: Self.propertiesInterface,
                                    member: "Set", arguments: [.string(interface), .string(name), .variant(value)]),
                     timeout: timeout)
    }
}

/// A `PropertiesChanged` signal's content.
public struct DBusPropertiesChange: Sendable, Equatable {
    public var interface: String
    public var changed: [String: DBusValue]
    public var invalidated: [String]

    /// nil when `message` is not a well-formed `PropertiesChanged`.
    public init?(_ message: DBusMessage) {
        guard message.arguments.count >= 2, let interface = message.arguments[0].string,
              let changed = message.arguments[1].dictionary else { return nil }
        self.interface = interface
        self.changed = changed
        invalidated = message.arguments.count > 2 ? (message.arguments[2].items ?? []).compactMap(\.string) : []
    }
}
