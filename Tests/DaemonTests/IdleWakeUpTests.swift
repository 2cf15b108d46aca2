import AgentCore
import Foundation
import TestRigs
import XCTest

/// `ariata-agent run` with nothing to capture sleeps (README, "Wake-ups"): no thread of
/// it wakes on a timer of its own between two health checks. Before `MainThreadExecutor`
/// libdispatch's watch of its worker pool woke it every second, from the service
/// lifecycle's first `await` on: at least 15 voluntary switches in the 15 s counted here.
final class IdleWakeUpTests: XCTestCase {
    func testAnIdleDaemonDoesNotWakeEverySecond() throws {
        // Only the health stream, reading a file nobody writes to; uploads and health
        // checks far apart (the check's 30 s tick may land in the window once).
        let rig = try DaemonRig(uploadInterval: 300, healthInterval: 30, locationEnabled: false,
                                microphoneConfig: "enabled = false")
        try rig.startAgent()
        let pid = try XCTUnwrap(rig.agent?.pid)
        // Up (READY=1), then a sample read and committed. The queue is not opened from here
        // until the window is over: with this process polling the new queue while the
        // daemon started, the daemon woke every second in 2 of 8 runs (with CI running
        // beside them). The suspect, not proven: a connection of the daemon's that failed to
        // open against that reader, whose closing GRDB hands to Dispatch's global queue
        // (README, "Wake-ups").
        var notes: [String] = []
        try waitUntil("READY=1 from the daemon", timeout: 30) {
            notes += rig.notifySocket.drain()
            return notes.contains { $0.hasPrefix("READY=1") }
        }
        try rig.appendHeartRates([70])
        Thread.sleep(forTimeInterval: 5)

        let before = ThreadSwitches.voluntaryByThread(pid: pid)
        Thread.sleep(forTimeInterval: 15)
        let after = ThreadSwitches.voluntaryByThread(pid: pid)
        XCTAssertTrue(rig.agent?.isRunning == true, rig.agentLog)

        let was = Dictionary(before.map { ($0.name, $0.switches) }) { first, _ in first }
        let woke = after.map { ($0.name, $0.switches - (was[$0.name] ?? 0)) }.filter { $0.1 > 0 }
        let total = woke.reduce(0) { $0 + $1.1 }
        print("measured: idle daemon, 15 s: \(total) voluntary switches \(woke)")
        XCTAssertLessThan(total, 8, "an idle daemon wakes only for its own timers: \(woke)")
        // No worker of libdispatch's default global queues (the ones it watches) exists:
        // Swift concurrency's jobs ran on the main thread.
        XCTAssertFalse(after.contains { $0.name.hasSuffix("default-qos") }, "\(after)")
        let queue = try rig.openQueue()
        XCTAssertEqual(try queue.records(stream: .health).count, 1, "the daemon read and committed the sample")
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
    }
}
