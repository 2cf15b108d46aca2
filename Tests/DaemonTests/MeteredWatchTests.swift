import DBus
import Foundation
import Logging
import Synchronization
import TestRigs
import XCTest
@testable import Daemon

/// The watch on NetworkManager's `Metered` against python-dbusmock's NetworkManager on a
/// private system bus (docs/laptop.md#metered-networks): read at start, followed by its
/// signal, NetworkManager absent, leaving and coming later, and no wake-ups while idle.
final class MeteredWatchTests: XCTestCase {
    func testNetworkManagersValuesReadAsMeteredOnlyForYesAndGuessYes() {
        let metered = (0...5).map { NetworkMetering(networkManagerValue: $0).isMetered }
        XCTAssertEqual(metered, [false, true, false, true, false, false])
        XCTAssertEqual(NetworkMetering(networkManagerValue: 3).word, "guess-yes")
        XCTAssertEqual(NetworkMetering(networkManagerValue: 9), .unknown, "a value of a later NetworkManager: today's behaviour")
    }

    private final class Heard: Sendable {
        let states = Mutex<[MeteredNetworkState]>([])
        func append(_ state: MeteredNetworkState) { states.withLock { $0.append(state) } }
        var all: [MeteredNetworkState] { states.withLock { $0 } }
        var last: MeteredNetworkState? { all.last }
    }

    private func watch(_ bus: DBusRig) -> NetworkManagerMeteredWatch {
        NetworkManagerMeteredWatch(bus: .address(bus.address), logger: Logger(label: "test"))
    }

    func testItReadsMeteredBeforeStartReturnsThenFollowsEveryChange() throws {
        let bus = try DBusRig(.system)
        let networkManager = try DBusMockRig.networkManager(on: bus, metered: 3)
        let watch = watch(bus)
        let heard = Heard()
        watch.start(report: heard.append)
        defer { watch.stop() }
        XCTAssertEqual(heard.all, [.watched(by: "NetworkManager", .guessYes)], "the first cycle must know it")

        try networkManager.setMetered(2)
        try waitUntil("the change to 'no'", timeout: 10) { heard.last == .watched(by: "NetworkManager", .no) }
        try networkManager.setMetered(1)
        try waitUntil("the change to 'yes'", timeout: 10) { heard.last == .watched(by: "NetworkManager", .yes) }
        XCTAssertEqual(heard.all.count, 3, "\(heard.all)")

        // Idle: the connection's thread sleeps while nothing happens on the bus.
        let before = try XCTUnwrap(ThreadSwitches.voluntary(named: "ariata-metered"))
        Thread.sleep(forTimeInterval: 3)
        let after = try XCTUnwrap(ThreadSwitches.voluntary(named: "ariata-metered"))
        XCTAssertLessThanOrEqual(after - before, 1, "the watch woke \(after - before) times in 3 idle seconds")

        watch.stop()
        try networkManager.setMetered(2)
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(heard.all.count, 3, "nothing reported after stop")
    }

    func testWithoutNetworkManagerItSaysSoAndTakesItUpWhenItComesAndGoes() throws {
        let bus = try DBusRig(.system)
        let watch = watch(bus)
        let heard = Heard()
        watch.start(report: heard.append)
        defer { watch.stop() }
        XCTAssertEqual(heard.all, [.unwatched(reason: "NetworkManager is not running on the system bus")])

        let networkManager = try DBusMockRig.networkManager(on: bus, metered: 1)
        // The template gets its Metered after it took its name; the change after is heard.
        try networkManager.setMetered(1)
        try waitUntil("NetworkManager taken up", timeout: 10) { heard.last == .watched(by: "NetworkManager", .yes) }

        networkManager.stop()
        try waitUntil("NetworkManager gone", timeout: 10) {
            heard.last == .unwatched(reason: "NetworkManager left the system bus")
        }
    }

    func testNoSystemBusIsSaidAndNothingElse() {
        let watch = NetworkManagerMeteredWatch(bus: .address("unix:path=/nonexistent/bus"), logger: Logger(label: "test"))
        let heard = Heard()
        watch.start(report: heard.append)
        watch.stop()
        guard case .unwatched(let reason)? = heard.last, heard.all.count == 1 else { return XCTFail("\(heard.all)") }
        XCTAssertTrue(reason.contains("cannot connect to the bus at unix:path=/nonexistent/bus"), reason)
    }
}
