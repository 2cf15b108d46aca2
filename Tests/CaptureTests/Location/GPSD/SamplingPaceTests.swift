@testable import Capture
import XCTest

final class SamplingPaceTests: XCTestCase {
    func testTicksKeepTheirPhaseAndMissedOnesAreNotReplayed() {
        var pace = SamplingPace(interval: 10, maxReadGap: 10, now: 100)
        XCTAssertFalse(pace.takeTick(now: 109.9))
        XCTAssertEqual(pace.untilTick(now: 109.9), 0.1, accuracy: 1e-9)
        XCTAssertTrue(pace.takeTick(now: 110.2))
        XCTAssertFalse(pace.takeTick(now: 110.3), "one tick per interval")
        XCTAssertEqual(pace.nextTick, 120, "the phase is kept, not shifted by a late wake")
        // Held up past three ticks: one tick now, the next a whole interval later.
        XCTAssertTrue(pace.takeTick(now: 151))
        XCTAssertFalse(pace.takeTick(now: 152))
        XCTAssertEqual(pace.nextTick, 161)
    }

    func testLongIntervalsAreReadInBetweenButTickOnlyOnTime() {
        var pace = SamplingPace(interval: 60, maxReadGap: 10, now: 0)
        XCTAssertEqual(pace.untilReadOrTick(now: 0), 10, "gpsd is read every 10 s")
        XCTAssertEqual(pace.untilTick(now: 0), 60, "without gpsd only the tick wakes")
        pace.didRead(now: 10)
        XCTAssertFalse(pace.takeTick(now: 10))
        XCTAssertEqual(pace.untilReadOrTick(now: 10), 10)
        pace.didRead(now: 55)
        XCTAssertEqual(pace.untilReadOrTick(now: 55), 5, "the tick comes before the next read")
    }

    func testShortIntervalsWakeOncePerTick() {
        let pace = SamplingPace(interval: 2, maxReadGap: 10, now: 0)
        XCTAssertEqual(pace.untilReadOrTick(now: 0), 2)
    }
}
