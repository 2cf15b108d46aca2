import DBus
import Foundation
import Synchronization
import TestRigs
import XCTest

/// The D-Bus seam against a real dbus-daemon on a private bus: calls, objects exported
/// and called from another connection, signals, errors, a lost bus, and an idle
/// connection that does not wake.
final class DBusConnectionTests: XCTestCase {
    private let busDaemon = DBusMethodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                           interface: "org.freedesktop.DBus", member: "ListNames")

    func testACallIsAnsweredByTheBus() throws {
        let rig = try DBusRig()
        let connection = try DBusConnection(.address(rig.address))
        let names = try connection.call(busDaemon).first?.items?.compactMap(\.string) ?? []
        XCTAssertTrue(names.contains("org.freedesktop.DBus"), "\(names)")
        XCTAssertTrue(names.contains(connection.uniqueName ?? "?"), "its own unique name is listed: \(names)")
    }

    func testTheSystemBusIsTakenFromTheEnvironment() throws {
        let rig = try DBusRig()
        setenv("DBUS_SYSTEM_BUS_ADDRESS", rig.address, 1)
        defer { unsetenv("DBUS_SYSTEM_BUS_ADDRESS") }
        let connection = try DBusConnection(.system)
        XCTAssertEqual(try connection.call(busDaemon).first?.items?.isEmpty, false)
    }

    /// Every kind of value goes out and comes back as it was: an object exported on one
    /// connection echoes its arguments to another.
    func testAnExportedObjectAnswersAnotherConnectionWithEveryKindOfValue() throws {
        let rig = try DBusRig()
        let server = try DBusConnection(.address(rig.address))
        let client = try DBusConnection(.address(rig.address))
        let calls = Mutex<[String]>([])
        let export = try server.export(path: "/test/Echo") { message in
            calls.withLock { $0.append(message.member ?? "?") }
            switch message.member {
            case "Echo": return .values(message.arguments)
            case "Refuse": return .error(name: "org.example.Error.Refused", message: "not today")
            default: return .unknown
            }
        }
        let values: [DBusValue] = [
            .string("grüße"), .objectPath("/a/b"), .uint32(4_000_000_000), .int32(-5), .bool(true), .double(51.5),
            .byte(200), .int16(-3), .uint16(65_000), .int64(-1 << 40), .uint64(1 << 60),
            .array(element: "y", [.byte(0x16), .byte(72)]), .array(element: "s", []),
            .dictionary(["Latitude": .double(52.5), "DesktopId": .string("ariata-agent")]),
            .structure([.string("x"), .uint32(1)]), .variant(.variant(.int32(7))),
        ]
        let echo = DBusMethodCall(destination: server.uniqueName ?? "", path: "/test/Echo", interface: "org.example.Echo",
                                  member: "Echo", arguments: values)
        XCTAssertEqual(try client.call(echo), values)

        var refuse = echo
        refuse.member = "Refuse"
        XCTAssertThrowsError(try client.call(refuse)) { error in
            XCTAssertEqual(error as? DBusError, .remote(name: "org.example.Error.Refused", message: "not today"))
        }
        var unknown = echo
        unknown.member = "Nothing"
        XCTAssertThrowsError(try client.call(unknown)) { error in
            guard case .remote(let name, _) = error as? DBusError else { return XCTFail("\(error)") }
            XCTAssertEqual(name, "org.freedesktop.DBus.Error.UnknownMethod")
        }
        XCTAssertEqual(calls.withLock { $0 }, ["Echo", "Refuse", "Nothing"])

        export.cancel()
        XCTAssertThrowsError(try client.call(echo), "a cancelled export no longer answers")
    }

    func testASignalReachesItsSubscriberAndNotAfterItIsCancelled() throws {
        let rig = try DBusRig()
        let watcher = try DBusConnection(.address(rig.address))
        let seen = Mutex<[[DBusValue]]>([])
        let subscription = try watcher.subscribe(.nameOwnerChanged("org.example.Watched")) { message in
            seen.withLock { $0.append(message.arguments) }
        }
        let owner = try DBusConnection(.address(rig.address))
        let request = DBusMethodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                     interface: "org.freedesktop.DBus", member: "RequestName",
                                     arguments: [.string("org.example.Watched"), .uint32(0)])
        XCTAssertEqual(try owner.call(request), [.uint32(1)], "the primary owner")
        try waitUntil("the NameOwnerChanged signal", timeout: 10) { seen.withLock { !$0.isEmpty } }
        XCTAssertEqual(seen.withLock { $0.first }, [.string("org.example.Watched"), .string(""), .string(owner.uniqueName ?? "?")])

        subscription.cancel()
        // A round trip on the watcher's own thread: the cancel has run there after it.
        _ = try watcher.call(busDaemon)
        owner.close()
        // The release is a signal the subscription no longer receives; one more round trip
        // on a third connection lets it arrive if it were going to.
        _ = try DBusConnection(.address(rig.address)).call(busDaemon)
        _ = try watcher.call(busDaemon)
        XCTAssertEqual(seen.withLock { $0.count }, 1, "\(seen.withLock { $0 })")
    }

    func testAMissingServiceIsNamedAsSuch() throws {
        let rig = try DBusRig()
        let connection = try DBusConnection(.address(rig.address))
        let call = DBusMethodCall(destination: "org.freedesktop.GeoClue2", path: "/org/freedesktop/GeoClue2/Manager",
                                  interface: "org.freedesktop.GeoClue2.Manager", member: "GetClient")
        XCTAssertThrowsError(try connection.call(call)) { error in
            XCTAssertTrue((error as? DBusError)?.isServiceMissing == true, "\(error)")
        }
    }

    func testNoBusIsAClearError() {
        XCTAssertThrowsError(try DBusConnection(.address("unix:path=/nonexistent/bus"))) { error in
            XCTAssertTrue("\(error)".contains("cannot connect to the bus at unix:path=/nonexistent/bus"), "\(error)")
        }
    }

    /// The bus going away ends the connection: the owner hears of it once, and calls fail
    /// at once instead of waiting out their time-out.
    func testALostBusIsReportedAndCallsFailAtOnce() throws {
        var rig: DBusRig? = try DBusRig()
        let connection = try DBusConnection(.address(rig?.address ?? ""))
        let lost = Mutex<[DBusError]>([])
        connection.onLost { reason in lost.withLock { $0.append(reason) } }
        rig = nil
        try waitUntil("the connection to notice the bus is gone", timeout: 10) { lost.withLock { !$0.isEmpty } }
        XCTAssertNotNil(connection.lostReason)
        let started = Date()
        XCTAssertThrowsError(try connection.call(busDaemon))
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "not its 25 s time-out")
        XCTAssertEqual(lost.withLock { $0.count }, 1)
    }

    /// An idle connection sleeps in poll with no time-out: its thread does not wake while
    /// nothing happens on the bus.
    func testAnIdleConnectionDoesNotWake() throws {
        let rig = try DBusRig()
        let connection = try DBusConnection(.address(rig.address), threadName: "ariata-dbusidle")
        let subscription = try connection.subscribe(.nameOwnerChanged("org.example.Nobody")) { _ in }
        _ = try connection.call(busDaemon)
        let before = try XCTUnwrap(ThreadSwitches.voluntary(named: "ariata-dbusidle"))
        Thread.sleep(forTimeInterval: 3)
        let after = try XCTUnwrap(ThreadSwitches.voluntary(named: "ariata-dbusidle"))
        XCTAssertLessThanOrEqual(after - before, 1, "the bus thread woke \(after - before) times in 3 idle seconds")
        subscription.cancel()
    }
}

extension DBusConnectionTests {
    /// A call nobody answers ends at its own time-out, not the default one.
    func testACallThatIsNotAnsweredEndsAtItsTimeOut() throws {
        let rig = try DBusRig()
        let slow = try DBusConnection(.address(rig.address))
        let export = try slow.export(path: "/test/Slow") { _ in
            Thread.sleep(forTimeInterval: 6)
            return .values([])
        }
        let client = try DBusConnection(.address(rig.address))
        let started = Date()
        XCTAssertThrowsError(try client.call(DBusMethodCall(destination: slow.uniqueName ?? "", path: "/test/Slow",
                                                            interface: "org.example.Slow", member: "Wait"), timeout: 1)) { error in
            XCTAssertEqual(error as? DBusError, .remote(name: "org.freedesktop.DBus.Error.NoReply", message: "Method call timed out"))
        }
        let took = Date().timeIntervalSince(started)
        XCTAssertGreaterThan(took, 0.9)
        XCTAssertLessThan(took, 4, "ended at its 1 s time-out")
        export.cancel()
    }
}
