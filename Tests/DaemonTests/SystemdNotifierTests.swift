import AgentCore
import Daemon
import Platform
import TestRigs
import Synchronization
import XCTest

final class SystemdNotifierTests: XCTestCase {
    func testSendsReadyStatusAndWatchdogToTheNotifySocket() throws {
        let dir = try TemporaryDirectory("notify")
        let socket = try NotifySocket(path: dir.file("notify.sock"))
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path])
        XCTAssertTrue(notifier.isActive)
        notifier.ready(status: "location healthy")
        notifier.watchdog()
        notifier.status("uploading")
        XCTAssertEqual(socket.drain(), ["READY=1\nSTATUS=location healthy", "WATCHDOG=1", "STATUS=uploading"])
    }

    func testWithoutNotifySocketNothingIsSent() {
        let notifier = SystemdNotifier(environment: [:])
        XCTAssertFalse(notifier.isActive)
        XCTAssertFalse(notifier.send("READY=1"))
    }

    func testWatchdogIntervalComesFromTheEnvironment() {
        XCTAssertEqual(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "120000000"]), 120)
        XCTAssertNil(SystemdNotifier.watchdogInterval(environment: [:]))
        XCTAssertNil(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "1000", "WATCHDOG_PID": "1"]))
    }
}

final class SupervisorTests: XCTestCase {
    /// A component whose liveness the test sets, counting restarts.
    final class Switchable: SupervisedComponent, @unchecked Sendable {
        let componentName: String
        var current: Liveness = .healthy
        var restarts = 0
        init(_ name: String) { componentName = name }
        func liveness() -> Liveness { current }
        func restart() { restarts += 1 }
    }

    func testStoresLivenessRestartsAfterTwoUnhealthyRoundsAndFeedsTheWatchdog() throws {
        let dir = try TemporaryDirectory("supervisor")
        let database = try AgentDatabase(path: dir.file("agent.sqlite"))
        let socket = try NotifySocket(path: dir.file("notify.sock"))
        let gps = Switchable("location")
        let mic = Switchable("microphone")
        mic.current = .disabled
        let supervisor = Supervisor(components: [gps, mic], database: database,
                                            notifier: SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path]),
                                            logger: .init(label: "test"))
        supervisor.checkLiveness()
        XCTAssertEqual(try database.agentState.storedLiveness().map(\.state), ["healthy", "disabled"])

        gps.current = .unhealthy(reason: "cannot reach gpsd at localhost:2947")
        supervisor.checkLiveness()
        XCTAssertEqual(gps.restarts, 0, "one tick of grace to recover alone")
        supervisor.checkLiveness()
        XCTAssertEqual(gps.restarts, 1)
        XCTAssertEqual(mic.restarts, 0, "a disabled stream is never restarted")
        let stored = try XCTUnwrap(database.agentState.storedLiveness().first { $0.component == "location" })
        XCTAssertEqual(stored.state, "unhealthy")
        XCTAssertEqual(stored.reason, "cannot reach gpsd at localhost:2947")

        let messages = socket.drain()
        XCTAssertEqual(messages.filter { $0 == "WATCHDOG=1" }.count, 3)
        XCTAssertTrue(messages.contains("STATUS=location unhealthy, microphone disabled"), "\(messages)")
    }

    /// A maintenance round is one commit at most, and none when nothing changed: a quiet daemon
    /// must not append to the WAL (and fsync) every 30 s for the same rows.
    func testAQuietCheckWritesNothingAndAChangeOrTheRewriteIntervalWritesOnce() throws {
        let dir = try TemporaryDirectory("supervisor-writes")
        let wall = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let database = try AgentDatabase(path: dir.file("agent.sqlite"), clock: wall)
        let gps = Switchable("location")
        let mic = Switchable("microphone")
        let monotonic = Mutex<TimeInterval>(0)
        let supervisor = Supervisor(components: [gps, mic], database: database, notifier: SystemdNotifier(environment: [:]),
                                            livenessRewrite: 300, clock: { monotonic.withLock { $0 } }, logger: .init(label: "test"))
        func walBytes() -> Int64 { DatabaseFiles.walBytes(dir.file("agent.sqlite")) }
        func checked(_ name: String) throws -> Date? { try database.agentState.storedLiveness().first { $0.component == name }?.checkedAt }

        supervisor.checkLiveness()
        let first = walBytes()
        XCTAssertEqual(try checked("location"), wall.now())

        for _ in 0..<5 {
            monotonic.withLock { $0 += 30 }
            wall.advance(by: 30)
            supervisor.checkLiveness()
        }
        XCTAssertEqual(walBytes(), first, "five quiet checks wrote nothing")
        XCTAssertEqual(try checked("location"), Date(timeIntervalSince1970: 1_800_000_000))

        gps.current = .unhealthy(reason: "cannot reach gpsd")
        monotonic.withLock { $0 += 30 }
        wall.advance(by: 30)
        supervisor.checkLiveness()
        let changed = walBytes()
        XCTAssertGreaterThan(changed, first, "a change is written at once")
        XCTAssertEqual(try database.agentState.storedLiveness().first { $0.component == "location" }?.reason, "cannot reach gpsd")
        XCTAssertEqual(try checked("microphone"), Date(timeIntervalSince1970: 1_800_000_000), "only what changed")

        // Past the rewrite interval every component's checked_at is fresh again.
        monotonic.withLock { $0 += 300 }
        wall.advance(by: 300)
        supervisor.checkLiveness()
        XCTAssertEqual(try checked("microphone"), wall.now())
        XCTAssertEqual(try checked("location"), wall.now())
    }
}
