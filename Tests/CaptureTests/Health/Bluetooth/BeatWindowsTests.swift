@testable import Capture
import Foundation
import XCTest

/// The windows a sensor's notifications are cut into: one heart rate per window (the mean,
/// whole bpm), nothing from a reading without skin contact, a variability figure per
/// longer window, and a stop's rule.
final class BeatWindowsTests: XCTestCase {
    let t0 = Date(timeIntervalSince1970: 1_795_000_000)

    func receipt(_ second: Double) -> BeatReceipt {
        BeatReceipt(monotonic: 1_000 + second, wall: t0.addingTimeInterval(second), boot: nil)
    }

    func testOneHeartRatePerWindowTheMeanOfItsReadingsDatedAtItsFirst() {
        var windows = BeatWindows(heartRateSeconds: 5, hrvSeconds: 300)
        var results: [BeatWindowResult] = []
        for (second, bpm) in [60, 61, 63, 62, 61, 70, 71].enumerated() {
            results += windows.add(HeartRateMeasurement(heartRate: bpm, contact: .detected), at: receipt(Double(second)))
        }
        // 60+61+63+62+61 = 307 / 5 = 61.4 → 61, closed by the reading at 5 s.
        XCTAssertEqual(results, [.heartRate(bpm: 61, readings: 5, start: receipt(0), seconds: 5)])
        XCTAssertEqual(windows.deadline, 1_010)
        XCTAssertEqual(windows.close(at: 1_010), [.heartRate(bpm: 71, readings: 2, start: receipt(5), seconds: 5)],
                       "70.5 rounds half away from zero")
        XCTAssertTrue(windows.isEmpty)
    }

    func testReadingsWithoutSkinContactAreLeftOut() {
        var windows = BeatWindows(heartRateSeconds: 5, hrvSeconds: 300)
        _ = windows.add(HeartRateMeasurement(heartRate: 90, contact: .notDetected), at: receipt(0))
        XCTAssertNil(windows.deadline, "no window begins without contact")
        _ = windows.add(HeartRateMeasurement(heartRate: 60, contact: .detected), at: receipt(1))
        _ = windows.add(HeartRateMeasurement(heartRate: 200, contact: .notDetected), at: receipt(2))
        _ = windows.add(HeartRateMeasurement(heartRate: 0), at: receipt(3))
        _ = windows.add(HeartRateMeasurement(heartRate: 62), at: receipt(4))
        XCTAssertEqual(windows.closeAll(), [.heartRate(bpm: 61, readings: 2, start: receipt(1), seconds: 5)])
        var none = BeatWindows(heartRateSeconds: 5, hrvSeconds: 300)
        _ = none.add(HeartRateMeasurement(heartRate: 80, contact: .notDetected), at: receipt(0))
        XCTAssertEqual(none.closeAll(), [], "a window of readings without contact sends nothing")
    }

    func testVariabilityPerWindowAndTheStopRule() throws {
        var windows = BeatWindows(heartRateSeconds: 5, hrvSeconds: 20)
        var results: [BeatWindowResult] = []
        for (index, rr) in HRVStatisticsTests.recorded.enumerated() {
            results += windows.add(HeartRateMeasurement(heartRate: 60, contact: .detected, rrIntervals: [rr]), at: receipt(Double(index)))
        }
        results += windows.close(at: 1_020)
        let hrv = results.compactMap { result -> HRVStatistics? in
            if case .hrv(let statistics, _, _) = result { return statistics }
            return nil
        }
        XCTAssertEqual(hrv.count, 1)
        XCTAssertEqual(try XCTUnwrap(hrv.first).sdnn, 17.825, accuracy: 0.001)
        XCTAssertEqual(try XCTUnwrap(hrv.first).rmssd, 24.665, accuracy: 0.001)

        // Cut by a stop after 8 beats: 8 s do not cover half of 20 s, so nothing is sent.
        var cut = BeatWindows(heartRateSeconds: 5, hrvSeconds: 20)
        for index in 0..<8 {
            _ = cut.add(HeartRateMeasurement(heartRate: 60, rrIntervals: [1000 + UInt16(index % 3) * 10]), at: receipt(Double(index)))
        }
        let atStop = cut.closeAll()
        XCTAssertTrue(atStop.contains { if case .hrvInsufficient(.tooLittleCovered, _) = $0 { true } else { false } }, "\(atStop)")
        XCTAssertTrue(atStop.contains { if case .heartRate(60, 3, _, _) = $0 { true } else { false } }, "\(atStop)")
        XCTAssertTrue(cut.isEmpty)
    }
}
