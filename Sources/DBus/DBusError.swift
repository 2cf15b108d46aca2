import Foundation

/// Why a D-Bus exchange failed, worded for a status line.
public enum DBusError: Error, Equatable, Sendable, CustomStringConvertible {
    /// sd-bus returned a negative errno.
    case system(code: Int32, while: String)
    /// The service answered with an error (`name` as D-Bus names it, e.g.
    /// `org.freedesktop.DBus.Error.ServiceUnknown`).
    case remote(name: String, message: String)
    /// A message did not have the shape its interface promises.
    case malformed(String)
    /// The connection is closed, or was lost and not yet made again.
    case notConnected
    /// The bus could not be reached at all.
    case cannotConnect(bus: String, code: Int32)

    public var description: String {
        switch self {
        case .system(let code, let what):
            return "\(what): \(String(cString: strerror(-code)))"
        case .remote(let name, let message):
            return message.isEmpty ? name : "\(message) (\(name))"
        case .malformed(let what):
            return "an answer of the wrong shape: \(what)"
        case .notConnected:
            return "not connected to the bus"
        case .cannotConnect(let bus, let code):
            return "cannot connect to the \(bus): \(String(cString: strerror(-code)))"
        }
    }

    /// The service is not on the bus (not installed, not running, not activatable).
    public var isServiceMissing: Bool {
        guard case .remote(let name, _) = self else { return false }
        return name == "org.freedesktop.DBus.Error.ServiceUnknown" || name == "org.freedesktop.DBus.Error.NameHasNoOwner"
    }

    /// No answer within the call's time-out.
    public var isNoReply: Bool {
        guard case .remote(let name, _) = self else { return false }
        return name == "org.freedesktop.DBus.Error.NoReply" || name == "org.freedesktop.DBus.Error.Timeout"
    }

    /// The service refused the caller.
    public var isAccessDenied: Bool {
        guard case .remote(let name, _) = self else { return false }
        return name == "org.freedesktop.DBus.Error.AccessDenied"
    }
}
