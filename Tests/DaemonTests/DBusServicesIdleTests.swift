import AgentCore
import Foundation
import TestRigs
import XCTest

/// `ariata-agent run` as the user service on a laptop with every D-Bus service it speaks
/// to on private buses: Debian's real GeoClue (with a desktop's agent), python-dbusmock's logind, NetworkManager and
/// BlueZ (a strap connected) on the system bus, the notification daemon on the session bus
/// (a notice shown). The clients share one system-bus connection and one session-bus
/// connection (docs/dbus.md); a strap's session has its own. Idle, no bus thread wakes.
/// Prints `measured:` with the daemon's threads and each one's wake-ups
/// (docs/performance.md).
final class DBusServicesIdleTests: XCTestCase {
    /// The threads that carry a bus connection, by the names the daemon gives them (and
    /// gave them before they were shared, for a measurement of an older build).
    private static let busThreads = ["ariata-sysbus", "ariata-userbus", "ariata-bluez",
                                     "ariata-geoclue", "ariata-sleep", "ariata-metered", "ariata-notify"]

    func testEveryServiceOnTheBusOneConnectionPerBusAndNoWakeUps() throws {
        let geoClue = try GeoClueRig(position: (47.37, 8.54))
        let system = geoClue.bus
        // The user service's GeoClue answers once the desktop's agent is there.
        let desktop = try DesktopGeoClueAgent(bus: system.address)
        let logind = try DBusMockRig.logind(on: system)
        let networkManager = try DBusMockRig.networkManager(on: system, metered: 2)
        try networkManager.addWiFi(interface: "wlan0", ssid: "Home", metered: 2)
        let strap = try BlueZMockRig(on: system)
        let session = try DBusRig(.session)
        let notices = try DBusMockRig.notificationDaemon(on: session)
        // A disk floor no disk has: the storage notice at the first check, so the session
        // bus is joined. Location every 10 minutes, uploads and checks far apart.
        let rig = try DaemonRig(uploadInterval: 300, checkInterval: 30, storageConfig: "min_free_mb = 1000000",
                                locationInterval: 600, microphoneConfig: "enabled = false", gpsdRunning: false,
                                healthConfig: """
                                    [[health.source]]
                                    kind = "ble"
                                    address = "\(strap.sensorAddress)"
                                    name = "strap"
                                    """)
        try rig.startAgent(environment: system.environment.merging(session.environment) { $1 }, unit: DaemonRig.userUnit)
        let pid = try XCTUnwrap(rig.agent?.pid)
        do {
            try waitUntil("the strap notifying, logind's lock, a notice and a GeoClue fix", timeout: 45) {
                try strap.isNotifying() && logind.holdsSleepDelay() && !notices.notifications().isEmpty
                    && rig.agentLog.contains("location from GeoClue")
            }
        } catch {
            print("agent log:\n\(rig.agentLog)\nGeoClue log:\n\(geoClue.log)")
            throw error
        }
        Thread.sleep(forTimeInterval: 3)

        let before = ThreadSwitches.voluntaryByThread(pid: pid)
        Thread.sleep(forTimeInterval: 15)
        let after = ThreadSwitches.voluntaryByThread(pid: pid)
        XCTAssertTrue(rig.agent?.isRunning == true, rig.agentLog)
        let was = Dictionary(before.map { ($0.name, $0.switches) }) { first, _ in first }
        let woke = after.map { ($0.name, $0.switches - (was[$0.name] ?? 0)) }
        func threadName(_ entry: String) -> String { String(entry.split(separator: " ").dropFirst().joined(separator: " ")) }
        let bus = woke.filter { Self.busThreads.contains(threadName($0.0)) }
        let busWakeUps = bus.reduce(0) { $0 + $1.1 }
        let total = woke.reduce(0) { $0 + $1.1 }
        print("measured: every D-Bus service on the bus, 15 s idle: \(after.count) threads, "
              + "\(bus.count) of them bus threads \(bus.map { threadName($0.0) }.sorted()); the bus threads woke \(busWakeUps) times, "
              + "the whole daemon \(total) \(woke.filter { $0.1 > 0 })")

        XCTAssertEqual(bus.map { threadName($0.0) }.sorted(), ["ariata-bluez", "ariata-sysbus", "ariata-userbus"],
                       "one connection per bus, and the strap's session")
        XCTAssertLessThanOrEqual(busWakeUps, 1, "no bus thread wakes while nothing happens: \(bus)")
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        XCTAssertFalse(try logind.holdsSleepDelay(), "the lock went with the daemon")
        withExtendedLifetime((networkManager, notices, desktop)) {}
    }
}
