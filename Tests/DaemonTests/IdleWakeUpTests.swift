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
        // The daemon is up and its Swift concurrency has run: start, the first check, and
        // a sample read, committed and counted.
        try rig.appendHeartRates([70])
        let queue = try rig.openQueue()
        try waitUntil("the health sample in the queue", timeout: 30) {
            try queue.records(stream: .health).count == 1
        }
        Thread.sleep(forTimeInterval: 3)

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
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
    }
}
