import Foundation
import Platform
import Synchronization
import TestRigs
import XCTest

/// The timer on the real clock with short intervals. Assertions use lower bounds (a
/// timer never fires early) and counts, never "how late", so a loaded machine cannot
/// make them flaky.
final class ReliableTimerTests: XCTestCase {
    /// Fire times seen by a handler.
    final class Fires: Sendable {
        private let times = Mutex<[Date]>([])
        func record() { times.withLock { $0.append(Date()) } }
        var all: [Date] { times.withLock { $0 } }
        var count: Int { times.withLock { $0.count } }
    }

    func testFiresOnScheduleAndNeverEarly() throws {
        let fires = Fires()
        let timer = ReliableTimer(label: "test.schedule", leeway: .milliseconds(1)) { fires.record() }
        let started = Date()
        timer.start(interval: 0.2)
        defer { timer.stop() }
        try waitUntil("three fires") { fires.count >= 3 }
        let times = fires.all
        XCTAssertGreaterThanOrEqual(times[0].timeIntervalSince(started), 0.19)
        for (earlier, later) in zip(times, times.dropFirst()) {
            XCTAssertGreaterThanOrEqual(later.timeIntervalSince(earlier), 0.19, "fired before its interval")
        }
        let next = try XCTUnwrap(timer.nextFireDate)
        XCTAssertGreaterThan(next, times[2])
        XCTAssertEqual(timer.fireCount, fires.count)
    }

    /// A deadline runs once, never early, then the timer is stopped; arming it again
    /// replaces the run that was due.
    func testRunOnceRunsOnceAndArmingAgainReplacesTheRun() throws {
        let fires = Fires()
        let timer = ReliableTimer(label: "test.once", leeway: .milliseconds(1)) { fires.record() }
        defer { timer.stop() }
        var started = Date()
        timer.runOnce(after: 0.2)
        XCTAssertTrue(timer.isRunning)
        try waitUntil("the deadline") { fires.count == 1 }
        XCTAssertGreaterThanOrEqual(fires.all[0].timeIntervalSince(started), 0.19, "ran before its deadline")
        try waitUntil("stopped after its run") { !timer.isRunning }
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(fires.count, 1, "a deadline runs once")

        timer.runOnce(after: 30)
        started = Date()
        timer.runOnce(after: 0.2)
        try waitUntil("the replacing deadline") { fires.count == 2 }
        XCTAssertGreaterThanOrEqual(fires.all[1].timeIntervalSince(started), 0.19)
        XCTAssertNil(timer.nextFireDate, "the 30 s run was replaced, not kept")
        XCTAssertEqual(timer.fireCount, 2)
    }

    func testStopFromItsOwnHandler() throws {
        let fires = Fires()
        let box = Mutex<ReliableTimer?>(nil)
        let timer = ReliableTimer(label: "test.self-stop") {
            fires.record()
            if fires.count == 2 { box.withLock { $0 }?.stop() }
        }
        box.withLock { $0 = timer }
        timer.start(interval: 0.05)
        try waitUntil("the handler to stop the timer") { !timer.isRunning }
        // Ten intervals more: nothing may fire any more.
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(fires.count, 2)
        XCTAssertNil(timer.nextFireDate)
        box.withLock { $0 = nil }
    }

    func testFireNowRunsOnceAtOnceAndRestartsTheInterval() throws {
        let fires = Fires()
        let timer = ReliableTimer(label: "test.fire-now") { fires.record() }
        timer.start(interval: 3_600)
        defer { timer.stop() }
        XCTAssertTrue(timer.fireNow())
        try waitUntil("the fire") { fires.count == 1 }
        let next = try XCTUnwrap(timer.nextFireDate)
        XCTAssertGreaterThan(next.timeIntervalSinceNow, 3_500)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(fires.count, 1, "one fire, not one per source")

        timer.stop()
        XCTAssertFalse(timer.fireNow(), "a stopped timer does not fire")
    }

    func testNoFireAfterStopAndStopWaitsForARunningHandler() throws {
        let fires = Fires()
        let finished = Mutex(0)
        let timer = ReliableTimer(label: "test.stop") {
            fires.record()
            Thread.sleep(forTimeInterval: 0.2)
            finished.withLock { $0 += 1 }
        }
        timer.start(interval: 0.05)
        try waitUntil("a handler to be running") { fires.count >= 1 }
        timer.stop()
        // stop() returned: the run it found in progress has completed...
        XCTAssertEqual(finished.withLock { $0 }, fires.count)
        let count = fires.count
        // ...and nothing starts afterwards.
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertEqual(fires.count, count)
        XCTAssertFalse(timer.isRunning)
    }

    /// What a laptop sees after sleeping through its deadline: the wall deadline is in
    /// the past, and the timer fires once, not once per missed interval.
    func testADeadlineThatPassedDuringSuspendFiresOnce() throws {
        let fires = Fires()
        let timer = ReliableTimer(label: "test.suspend") { fires.record() }
        timer.start(interval: 600)
        defer { timer.stop() }
        timer.reschedule(at: Date().addingTimeInterval(-3_600))
        try waitUntil("the overdue fire") { fires.count == 1 }
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(fires.count, 1)
        XCTAssertGreaterThan(try XCTUnwrap(timer.nextFireDate).timeIntervalSinceNow, 500)
    }

    func testATimerThatIsDroppedIsFreedAndStops() throws {
        let fires = Fires()
        weak var weakTimer: ReliableTimer?
        do {
            let timer = ReliableTimer(label: "test.leak") { fires.record() }
            timer.start(interval: 0.05)
            weakTimer = timer
            try waitUntil("a fire") { fires.count >= 1 }
        }
        // A fire already running holds the timer until it returns; a leak never lets go.
        XCTAssertNoThrow(try waitUntil("the dropped timer to be freed (else it or its sources leaked)", timeout: 5) {
            weakTimer == nil
        })
        let count = fires.count
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(fires.count, count, "a dropped timer kept firing")
    }
}
