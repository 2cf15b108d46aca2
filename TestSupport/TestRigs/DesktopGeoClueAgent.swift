import DBus
import Foundation

/// A desktop's GeoClue agent, as gnome-shell is one: registered under a whitelisted id on
/// its own connection, it authorizes every app at the level asked. What a user service
/// relies on in a desktop session.
public final class DesktopGeoClueAgent: Sendable {
    private let connection: DBusConnection
    private let export: DBusRegistration

    public init(bus address: String, id: String = "gnome-shell") throws {
        connection = try DBusConnection(.address(address))
        export = try connection.export(path: "/org/freedesktop/GeoClue2/Agent") { call in
            switch call.member {
            case "GetAll": return .values([.dictionary(["MaxAccuracyLevel": .uint32(8)])])
            case "Get": return .values([.variant(.uint32(8))])
            case "AuthorizeApp": return .values([.bool(true), call.arguments.count == 2 ? call.arguments[1] : .uint32(8)])
            default: return .unknown
            }
        }
        _ = try connection.call(DBusMethodCall(destination: "org.freedesktop.GeoClue2", path: "/org/freedesktop/GeoClue2/Manager",
                                               interface: "org.freedesktop.GeoClue2.Manager", member: "AddAgent",
                                               arguments: [.string(id)]))
    }

    deinit {
        export.cancel()
        connection.close()
    }
}
