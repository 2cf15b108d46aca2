import AgentCore
import DBus
import Foundation
import Synchronization
import TestRigs
import XCTest

/// The shape every D-Bus client is written in (`DBusLink`, `DBusService`) against a real
/// dbus-daemon on a private bus: a name's owner coming, changing hands and going, each
/// reported once; the bus killed and started again, reported once each way, with calls
/// working again; and one client's end or loss leaving the others alive (docs/dbus.md).
final class DBusServiceTests: XCTestCase {
    private static let name = "org.example.Watched"
    private let listNames = DBusMethodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                           interface: "org.freedesktop.DBus", member: "ListNames")

    /// What a follower heard, as text (`appeared (:1.5)`, `vanished (not on the bus)`).
    private final class Heard: Sendable {
        private let events = Mutex<[String]>([])
        func append(_ event: DBusServiceEvent) {
            let text: String
            switch event {
            case .appeared(let owner, _): text = "appeared \(owner)"
            case .vanished(.notOnBus): text = "vanished"
            case .vanished(.noBus): text = "bus lost"
            }
            events.withLock { $0.append(text) }
        }
        var all: [String] { events.withLock { $0 } }
    }

    /// A connection of the test's owning `name` (or queued for it).
    private func owner(_ rig: DBusRig, _ name: String = DBusServiceTests.name) throws -> DBusConnection {
        let connection = try DBusConnection(.address(rig.address))
        _ = try connection.call(DBusMethodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                               interface: "org.freedesktop.DBus", member: "RequestName",
                                               arguments: [.string(name), .uint32(0)]))
        return connection
    }

    /// Lets signals already sent reach the follower: a round trip through the bus on the
    /// follower's own connection comes back after them.
    private func settle(_ service: DBusService) throws {
        _ = try service.connection().call(listNames)
    }

    func testAnOwnerComingChangingHandsAndGoingIsReportedOnceEach() throws {
        let rig = try DBusRig()
        let service = DBusService(Self.name, on: DBusLink(.address(rig.address)))
        let heard = Heard()
        let following = service.follow(heard.append)
        defer { following.cancel() }
        try waitUntil("the first word", timeout: 10) { !heard.all.isEmpty }
        XCTAssertEqual(heard.all, ["vanished"], "no owner yet")

        let first = try owner(rig)
        // Queued behind the first: owner once the first lets go.
        let second = try owner(rig)
        let firstName = try XCTUnwrap(first.uniqueName), secondName = try XCTUnwrap(second.uniqueName)
        try waitUntil("the owner", timeout: 10) { heard.all.count == 2 }
        first.close()
        try waitUntil("the change of hands", timeout: 10) { heard.all.count == 3 }
        second.close()
        try waitUntil("the owner gone", timeout: 10) { heard.all.count == 4 }
        try settle(service)
        XCTAssertEqual(heard.all, ["vanished", "appeared \(firstName)", "appeared \(secondName)", "vanished"])
    }

    func testAFollowerComingLateHearsTheOwnerThatIsThere() throws {
        let rig = try DBusRig()
        let owning = try owner(rig)
        let service = DBusService(Self.name, on: DBusLink(.address(rig.address)))
        let heard = Heard()
        let following = service.follow(heard.append)
        defer { following.cancel() }
        try waitUntil("the first word", timeout: 10) { !heard.all.isEmpty }
        try settle(service)
        XCTAssertEqual(heard.all, ["appeared \(owning.uniqueName ?? "?")"])
    }

    /// dbus restarted: the owner is lost with the bus, once; the link connects again on its
    /// backoff, finds the name owned again, once; calls go through again.
    func testTheBusKilledAndStartedAgainIsReportedOnceEachWayAndCallsWorkAgain() throws {
        let rig = try DBusRig()
        let link = DBusLink(.address(rig.address), reconnect: Backoff(base: 0.2, cap: 1))
        let service = DBusService(Self.name, on: link)
        var owning = try owner(rig)
        let heard = Heard()
        let following = service.follow(heard.append)
        defer { following.cancel() }
        let firstOwner = try XCTUnwrap(owning.uniqueName)
        try waitUntil("the owner", timeout: 10) { heard.all == ["appeared \(firstOwner)"] }
        let before = try service.connection()

        try rig.restartDaemon()
        try waitUntil("the bus lost", timeout: 10) { heard.all.count == 2 }
        XCTAssertEqual(heard.all.last, "bus lost")
        owning = try owner(rig)
        try waitUntil("the owner found again on a new connection", timeout: 10) { heard.all.count == 3 }
        try settle(service)
        XCTAssertEqual(heard.all, ["appeared \(firstOwner)", "bus lost", "appeared \(owning.uniqueName ?? "?")"])
        let after = try service.connection()
        XCTAssertFalse(before === after, "a new connection")
        XCTAssertNotNil(before.lostReason)
        XCTAssertEqual(try after.call(listNames).first?.items?.contains(.string(Self.name)), true)
    }

    /// The process's link is one per bus: every service on it shares one connection. The
    /// bus lost and back brings every one of them back; one that stops following leaves the
    /// others hearing.
    func testServicesOnOneBusShareItsConnectionAndComeBackTogether() throws {
        let rig = try DBusRig()
        let bus = DBusBus.address(rig.address)
        let link = DBusLink(bus, reconnect: Backoff(base: 0.2, cap: 1))
        let logind = DBusService("org.example.Login", on: link)
        let network = DBusService("org.example.Network", on: link)
        XCTAssertTrue(try logind.connection() === network.connection(), "one connection for both")
        let shared = DBusLink.shared(bus)
        XCTAssertTrue(shared === DBusLink.shared(bus), "the process's link for a bus is one while it is held")

        var owners = [try owner(rig, "org.example.Login"), try owner(rig, "org.example.Network")]
        let heardLogin = Heard(), heardNetwork = Heard()
        let followingLogin = logind.follow(heardLogin.append)
        var followingNetwork: DBusRegistration? = network.follow(heardNetwork.append)
        try waitUntil("both owners", timeout: 10) { heardLogin.all.count == 1 && heardNetwork.all.count == 1 }

        try rig.restartDaemon()
        owners = [try owner(rig, "org.example.Login"), try owner(rig, "org.example.Network")]
        try waitUntil("both back", timeout: 10) { heardLogin.all.count == 3 && heardNetwork.all.count == 3 }
        XCTAssertEqual(heardLogin.all.dropFirst().first, "bus lost")
        XCTAssertEqual(heardNetwork.all.last, "appeared \(owners[1].uniqueName ?? "?")")

        // One client ends: the other still hears its service go.
        followingNetwork?.cancel()
        followingNetwork = nil
        owners.forEach { $0.close() }
        try waitUntil("logind's name gone", timeout: 10) { heardLogin.all.count == 4 }
        try settle(logind)
        XCTAssertEqual(heardLogin.all.last, "vanished")
        XCTAssertEqual(heardNetwork.all.count, 3, "nothing after the end: \(heardNetwork.all)")
        followingLogin.cancel()
    }

    /// After a loss, a client that asks for the connection before the link's own retry
    /// (GeoClue's reader on its backoff) makes it for everyone: the other clients' services
    /// hear of it, and are not left waiting for a retry that no longer comes.
    func testAConnectionMadeByOneClientAfterALossBringsTheOthersBack() throws {
        let rig = try DBusRig()
        let link = DBusLink(.address(rig.address), reconnect: .constant(600))
        let service = DBusService(Self.name, on: link)
        var owning = try owner(rig)
        let heard = Heard()
        let following = service.follow(heard.append)
        defer { following.cancel() }
        try waitUntil("the owner", timeout: 10) { heard.all.count == 1 }
        try rig.restartDaemon()
        try waitUntil("the bus lost", timeout: 10) { heard.all.count == 2 }
        owning = try owner(rig)
        _ = try link.connection().call(listNames)
        try waitUntil("the owner found on the connection another client made", timeout: 10) { heard.all.count == 3 }
        XCTAssertEqual(heard.all.last, "appeared \(owning.uniqueName ?? "?")")
    }

    /// A bus that cannot be reached is said at once, and once.
    func testNoBusIsReportedOnceAsSuch() throws {
        let service = DBusService(Self.name, on: DBusLink(.address("unix:path=/nonexistent/bus"), reconnect: .constant(0.05)))
        let heard = Heard()
        let following = service.follow(heard.append)
        defer { following.cancel() }
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(heard.all, ["bus lost"])
    }

    /// With every client's service on it, the shared connection's thread sleeps while
    /// nothing happens on the bus.
    func testAnIdleLinkDoesNotWake() throws {
        let rig = try DBusRig()
        let link = DBusLink(.address(rig.address), threadName: "ariata-linkidle")
        let services = ["org.example.A", "org.example.B", "org.example.C"].map { DBusService($0, on: link) }
        let heard = Heard()
        let following = services.map { $0.follow(heard.append) }
        try waitUntil("every first word", timeout: 10) { heard.all.count == 3 }
        let before = try XCTUnwrap(ThreadSwitches.voluntary(named: "ariata-linkidle"))
        Thread.sleep(forTimeInterval: 3)
        let after = try XCTUnwrap(ThreadSwitches.voluntary(named: "ariata-linkidle"))
        XCTAssertLessThanOrEqual(after - before, 1, "the bus thread woke \(after - before) times in 3 idle seconds")
        following.forEach { $0.cancel() }
    }
}
