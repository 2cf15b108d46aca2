import Foundation
import Platform
import PlatformTestSupport
import Synchronization
import XCTest

/// The virtual scheduler keeps `ReliableTimer`'s rules (docs/architecture.md, Timers) on a
/// clock the test moves: runs in deadline order at their own moments, what a handler does
/// to its own timer wins, a jump forward runs once and a jump backward postpones nothing.
final class VirtualSchedulerTests: XCTestCase {
    /// What ran, and when on the virtual wall clock.
    final class Log: Sendable {
        private let entries = Mutex<[(String, Date)]>([])
        func add(_ name: String, _ at: Date) { entries.withLock { $0.append((name, at)) } }
        var names: [String] { entries.withLock { $0.map(\.0) } }
        var times: [Date] { entries.withLock { $0.map(\.1) } }
    }

    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func testRunsInDeadlineOrderEachAtItsMoment() {
        let scheduler = VirtualScheduler(wallClock: start)
        let log = Log()
        let every30 = scheduler.makeTimer(label: "30") { log.add("30", scheduler.now()) }
        let once45 = scheduler.makeTimer(label: "45") { log.add("45", scheduler.now()) }
        every30.start(interval: 30)
        once45.runOnce(after: 45)
        XCTAssertEqual(scheduler.advance(by: 29.9), 0, "nothing is due before its deadline")
        XCTAssertEqual(scheduler.advance(by: 70.1), 4)
        XCTAssertEqual(log.names, ["30", "45", "30", "30"])
        XCTAssertEqual(log.times.map { $0.timeIntervalSince(start) }, [30, 45, 60, 90])
        XCTAssertEqual(scheduler.now().timeIntervalSince(start), 100)
        XCTAssertEqual(scheduler.monotonicSeconds(), 100)
        XCTAssertFalse(once45.isRunning, "a deadline stops after its run")
        XCTAssertEqual(every30.nextFireDate, start.addingTimeInterval(120))
        XCTAssertEqual(every30.fireCount, 3)
    }

    func testAHandlerThatReschedulesOrStopsItsOwnTimerWins() {
        let scheduler = VirtualScheduler(wallClock: start)
        let log = Log()
        let slot = Mutex<(any ScheduledTimer)?>(nil)
        let timer = scheduler.makeTimer(label: "self") {
            log.add("run", scheduler.now())
            let timer = slot.withLock { $0 }
            if log.names.count == 1 { timer?.reschedule(after: 5) } else { timer?.stop() }
        }
        slot.withLock { $0 = timer }
        timer.start(interval: 10)
        scheduler.advance(by: 100)
        XCTAssertEqual(log.times.map { $0.timeIntervalSince(start) }, [10, 15], "rescheduled to 5 s, then stopped")
        XCTAssertFalse(timer.isRunning)
        XCTAssertFalse(timer.fireNow(), "a stopped timer does not run")
        XCTAssertEqual(scheduler.advance(by: 0), 0)
    }

    func testFireNowRunsAtTheNextAdvanceAndCountsTheIntervalFromThen() {
        let scheduler = VirtualScheduler(wallClock: start)
        let log = Log()
        let timer = scheduler.makeTimer(label: "now") { log.add("run", scheduler.now()) }
        timer.start(interval: 60)
        scheduler.advance(by: 20)
        XCTAssertTrue(timer.fireNow())
        XCTAssertEqual(scheduler.advance(by: 0), 1)
        XCTAssertEqual(timer.nextFireDate, start.addingTimeInterval(80))
    }

    func testAJumpForwardRunsOnceAndABackwardJumpPostponesNothing() {
        let scheduler = VirtualScheduler(wallClock: start)
        let log = Log()
        let timer = scheduler.makeTimer(label: "jumps") { log.add("run", scheduler.now()) }
        timer.start(interval: 30)

        // Forward an hour (NTP, or a suspend): one run at once, not 120 replayed.
        XCTAssertEqual(scheduler.setWallClock(to: start.addingTimeInterval(3_600)), 1)
        XCTAssertEqual(timer.nextFireDate, start.addingTimeInterval(3_630))

        // Backward an hour: the next run still comes 30 s on (the monotonic guard).
        scheduler.setWallClock(to: start)
        XCTAssertEqual(scheduler.advance(by: 29), 0)
        XCTAssertEqual(scheduler.advance(by: 1), 1, "the backward jump did not postpone the run")
        XCTAssertEqual(log.names.count, 2)
        XCTAssertEqual(timer.nextFireDate, start.addingTimeInterval(60), "the next interval counts on the new wall clock")
    }

    /// A suspend moves the wall and boot clocks, not the monotonic one; a timer due in
    /// between runs once on resume; the suspend detector reads the gap from the seam.
    func testASuspendRunsWhatFellDueOnceAndTheDetectorTellsItsLength() throws {
        let scheduler = VirtualScheduler(wallClock: start)
        let log = Log()
        let timer = scheduler.makeTimer(label: "suspend") { log.add("run", scheduler.now()) }
        timer.start(interval: 30)
        var detector = SuspendDetector(clocks: scheduler)
        scheduler.advance(by: 10)
        XCTAssertEqual(try XCTUnwrap(detector.suspendedSinceLastCheck()), 0, accuracy: 1e-9, "time passing awake is no suspend")

        XCTAssertEqual(scheduler.suspend(for: 3_600), 1, "one run on resume, not 120 replayed")
        XCTAssertEqual(scheduler.now(), start.addingTimeInterval(3_610))
        XCTAssertEqual(scheduler.monotonicSeconds(), 10, "the monotonic clock stops while suspended")
        XCTAssertEqual(try XCTUnwrap(scheduler.bootSeconds()), 3_610, accuracy: 1e-9, "the boot clock counts it")
        XCTAssertEqual(try XCTUnwrap(detector.suspendedSinceLastCheck()), 3_600, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(detector.suspendedSinceLastCheck()), 0, accuracy: 1e-9, "told once")

        // A wall-clock jump of the same size (NTP) is not a suspend.
        scheduler.setWallClock(to: scheduler.now().addingTimeInterval(3_600))
        XCTAssertEqual(try XCTUnwrap(detector.suspendedSinceLastCheck()), 0, accuracy: 1e-9)
        XCTAssertEqual(log.names.count, 2)
    }

    func testADroppedTimerNeverRuns() {
        let scheduler = VirtualScheduler(wallClock: start)
        let log = Log()
        do {
            let timer = scheduler.makeTimer(label: "dropped") { log.add("run", scheduler.now()) }
            timer.start(interval: 1)
        }
        XCTAssertEqual(scheduler.advance(by: 10), 0)
        XCTAssertEqual(log.names, [])
    }
}
