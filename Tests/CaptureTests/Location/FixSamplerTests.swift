@testable import Capture
import XCTest

final class FixSamplerTests: XCTestCase {
    private func fix(_ second: Int, latitude: Double = 52.5) -> LocationFix {
        LocationFix(mode: 3, time: FixTime(seconds: 1_790_000_000 + second, nanoseconds: 0),
               latitude: latitude, longitude: 13.4, source: .gpsd)
    }

    func testNothingToWriteWithoutAFix() {
        XCTAssertNil(FixSampler().pending)
    }

    func testTheLatestFixOfAnIntervalIsWrittenOnce() {
        var sampler = FixSampler()
        sampler.offer(fix(1))
        sampler.offer(fix(2))
        sampler.offer(fix(3, latitude: 52.6))
        XCTAssertEqual(sampler.pending, fix(3, latitude: 52.6))
        sampler.markWritten(fix(3))
        XCTAssertNil(sampler.pending, "the same fix must not be written twice")
    }

    func testTheSameFixTimeReportedAgainIsNoNewRecord() {
        var sampler = FixSampler()
        sampler.offer(fix(1))
        sampler.markWritten(fix(1))
        // gpsd repeats a TPV for the same epoch (say, after a reconnect).
        sampler.offer(fix(1))
        XCTAssertNil(sampler.pending)
        sampler.offer(fix(2))
        XCTAssertEqual(sampler.pending?.time, fix(2).time)
    }

    func testAFixStaysPendingUntilWritten() {
        var sampler = FixSampler()
        sampler.offer(fix(1))
        XCTAssertNotNil(sampler.pending)
        // A failed write leaves it; a newer fix replaces it.
        XCTAssertNotNil(sampler.pending)
        sampler.offer(fix(2))
        XCTAssertEqual(sampler.pending?.time, fix(2).time)
    }
}

