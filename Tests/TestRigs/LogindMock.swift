import DBus
import Foundation
import Rigs

/// systemd-logind as python-dbusmock's `logind` template plays it, on a private system bus:
/// `Inhibit` hands out a real file descriptor (and `ListInhibitors` lists the lock until
/// it is closed), and the test sends `PrepareForSleep` as logind does around a suspend.
public final class LogindMock: @unchecked Sendable {
    public let bus: DBusRig
    private let client: DBusConnection

    public init() throws {
        bus = try DBusRig(.system)
        try bus.start("/usr/bin/python3", ["-m", "dbusmock", "--template", "logind"], owning: "org.freedesktop.login1")
        client = try DBusConnection(.address(bus.address))
    }

    /// The inhibitor locks held now: (what, who, why, mode).
    public func inhibitors() throws -> [(what: String, who: String, why: String, mode: String)] {
        let answer = try client.call(DBusMethodCall(destination: "org.freedesktop.login1", path: "/org/freedesktop/login1",
                                                    interface: "org.freedesktop.login1.Manager", member: "ListInhibitors"))
        return (answer.first?.items ?? []).compactMap { item in
            guard case .structure(let fields) = item, fields.count >= 4,
                  let what = fields[0].string, let who = fields[1].string, let why = fields[2].string, let mode = fields[3].string
            else { return nil }
            return (what, who, why, mode)
        }
    }

    /// Whether `who` holds a delay lock on sleep.
    public func holdsSleepDelay(_ who: String = "ariata-agent") throws -> Bool {
        try inhibitors().contains { $0.what == "sleep" && $0.who == who && $0.mode == "delay" }
    }

    /// logind's signal before a suspend (true) and after the resume (false).
    public func prepareForSleep(_ going: Bool) throws {
        _ = try client.call(DBusMethodCall(destination: "org.freedesktop.login1", path: "/org/freedesktop/login1",
                                           interface: "org.freedesktop.DBus.Mock", member: "EmitSignal",
                                           arguments: [.string("org.freedesktop.login1.Manager"), .string("PrepareForSleep"),
                                                       .string("b"), .array(element: "v", [.variant(.bool(going))])]))
    }
}
