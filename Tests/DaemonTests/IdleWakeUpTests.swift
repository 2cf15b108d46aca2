import AgentCore
import Foundation
import TestRigs
import XCTest

/// `ariata-agent run` with nothing to capture sleeps (docs/decisions/0006-main-thread-executor.md): no thread of
/// it wakes on a timer of its own between two maintenance rounds. Before `MainThreadExecutor`
/// libdispatch's watch of its worker pool woke it every second, from the service
/// lifecycle's first `await` on: at least 15 voluntary switches in the 15 s counted here.
final class IdleWakeUpTests: XCTestCase {
    func testAnIdleDaemonDoesNotWakeEverySecond() throws {
        // Only the health stream, reading a file nobody writes to; uploads and health
        // checks far apart (the check's 30 s tick may land in the window once).
        // NetworkManager and logind on the system bus: the daemon's connections to them
        // (the metered watch, the sleep watch holding its lock) are open and idle, and must
        // not wake it either.
        let bus = try DBusRig(.system)
        let networkManager = try DBusMockRig.networkManager(on: bus, metered: 2)
        // A Wi-Fi device under the default route: the watch follows devices too.
        try networkManager.addWiFi(interface: "wlan0", ssid: "Home", metered: 2)
        let logind = try DBusMockRig.logind(on: bus)
        let rig = try DaemonRig(uploadInterval: 300, checkInterval: 30, locationEnabled: false,
                                microphoneConfig: "enabled = false")
        try rig.startAgent(environment: bus.environment)
        let pid = try XCTUnwrap(rig.agent?.pid)
        // Up (READY=1), then a sample read and committed. The queue is not opened from here
        // until the windows are over, so that only the daemon's own work is counted.
        var notes: [String] = []
        try waitUntil("READY=1 from the daemon", timeout: 30) {
            notes += rig.notifySocket.drain()
            return notes.contains { $0.hasPrefix("READY=1") }
        }
        try rig.appendHeartRates([70])
        Thread.sleep(forTimeInterval: 5)

        XCTAssertTrue(try logind.holdsSleepDelay(), "the sleep watch is connected and holds its lock")
        try assertSleeps(pid: pid, rig: rig, "an idle daemon")

        // The daemon reads and writes its queue through one connection: a pool's readers
        // meet on concurrent Dispatch queues, which may hand a waiting reader to the
        // default global queue and start the watch (in 1 of the CI's runs). By now the first
        // upload cycle and a maintenance round have read it.
        XCTAssertEqual(try Self.openFiles(pid: pid, named: "agent.sqlite"), 1,
                       "one connection to the queue (one descriptor of the database file)")

        // A reload replaces the daemon's timers: releasing one must not start the watch
        // (a queue-specific value's clean-up is handed to the default global queue).
        notes.removeAll()
        rig.agent?.signal(SIGHUP)
        try waitUntil("READY=1 again after the reload", timeout: 30) {
            notes += rig.notifySocket.drain()
            return notes.contains { $0.hasPrefix("READY=1") }
        }
        Thread.sleep(forTimeInterval: 6)
        try assertSleeps(pid: pid, rig: rig, "an idle daemon after a reload")

        let database = try rig.openDatabase()
        XCTAssertEqual(try database.recordQueue.records(stream: .health).count, 1, "the daemon read and committed the sample")
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        XCTAssertTrue(rig.agentLog.contains("not metered: NetworkManager says no for wlan0"), "the watch was connected: \(rig.agentLog)")
        XCTAssertFalse(try logind.holdsSleepDelay(), "the lock went with the daemon")
        withExtendedLifetime(networkManager) {}
    }

    /// Counts the daemon's voluntary context switches over 15 s: fewer than 8 (the health
    /// check's 30 s tick may land in the window once), and no worker of libdispatch's
    /// default global queues (the ones it watches).
    private func assertSleeps(pid: Int32, rig: DaemonRig, _ what: String,
                              file: StaticString = #filePath, line: UInt = #line) throws {
        let before = ThreadSwitches.voluntaryByThread(pid: pid)
        Thread.sleep(forTimeInterval: 15)
        let after = ThreadSwitches.voluntaryByThread(pid: pid)
        XCTAssertTrue(rig.agent?.isRunning == true, rig.agentLog, file: file, line: line)

        let was = Dictionary(before.map { ($0.name, $0.switches) }) { first, _ in first }
        let woke = after.map { ($0.name, $0.switches - (was[$0.name] ?? 0)) }.filter { $0.1 > 0 }
        let total = woke.reduce(0) { $0 + $1.1 }
        print("measured: \(what), 15 s: \(total) voluntary switches \(woke)")
        XCTAssertLessThan(total, 8, "\(what) wakes only for its own timers: \(woke)", file: file, line: line)
        XCTAssertFalse(after.contains { $0.name.hasSuffix("default-qos") }, "\(after)", file: file, line: line)
    }

    /// How many of the process's descriptors are open on a file of that name.
    private static func openFiles(pid: Int32, named name: String) throws -> Int {
        let directory = "/proc/\(pid)/fd"
        return try FileManager.default.contentsOfDirectory(atPath: directory).filter { fd in
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + fd)) ?? ""
            return (target as NSString).lastPathComponent == name
        }.count
    }
}
