@testable import Capture
import XCTest

/// SDNN and RMSSD of a recorded RR sequence with artefacts, against figures worked out by
/// hand (below), and the rules that send nothing for a poor window.
final class HRVStatisticsTests: XCTestCase {
    /// A seated recording's RR intervals in the sensor's 1/1024 s, with a missed beat
    /// (index 5: 2068, two beats' worth), an extra beat splitting one interval (8 and 9:
    /// 502 + 509) and a glitch (12: 240, 234 ms, below the 300 ms floor).
    static let recorded: [UInt16] = [1004, 1018, 987, 1032, 1051, 2068, 1040, 1011, 502, 509,
                                     1026, 996, 240, 1009, 1023, 990, 1002, 1015, 1037, 1020]

    static func intervals(_ ticks: [UInt16]) -> [RRInterval] {
        ticks.map { RRInterval(milliseconds: Double($0) * 1000 / 1024) }
    }

    func testArtefactsAreTheMissedBeatTheExtraBeatAndTheGlitch() {
        let clean = RRArtefactFilter().clean(Self.intervals(Self.recorded))
        XCTAssertEqual(clean.indices.filter { !clean[$0] }, [5, 8, 9, 12])
    }

    /// By hand, in ticks (1/1024 s), then × 1000/1024 for ms:
    /// - 16 clean intervals, sum 16261, mean 1016.3125;
    /// - Σ(t − mean)² = 4997.4375; / 15 = 333.1625; √ = 18.2527 ticks = 17.825 ms (SDNN);
    /// - successive differences of adjacent clean pairs (none across an artefact):
    ///   14, −31, 45, 19 | −29 | −30 | 14, −33, 12, 13, 22, −17 : 12 of them;
    ///   Σd² = 7655; / 12 = 637.9167; √ = 25.2570 ticks = 24.665 ms (RMSSD).
    func testSDNNAndRMSSDOfTheRecordedSequence() throws {
        let result = try HRVStatistics.compute(Self.intervals(Self.recorded), windowSeconds: 20).get()
        XCTAssertEqual(result.cleanIntervals, 16)
        XCTAssertEqual(result.rejectedIntervals, 4)
        XCTAssertEqual(result.sdnn, 17.825, accuracy: 0.001)
        XCTAssertEqual(result.rmssd, 24.665, accuracy: 0.001)
        XCTAssertEqual(result.cleanSeconds, 16261.0 / 1024, accuracy: 1e-9)
    }

    func testAGapBreaksTheSuccessiveDifferences() throws {
        var intervals = Self.intervals(Self.recorded)
        intervals[1].followsPrevious = false  // reconnected between the first two beats
        let result = try HRVStatistics.compute(intervals, windowSeconds: 20).get()
        // The pair (1004, 1018), d = 14, is gone: Σd² = 7655 − 196 = 7459 over 11.
        XCTAssertEqual(result.rmssd, (7459.0 / 11).squareRoot() * 1000 / 1024, accuracy: 1e-9)
        XCTAssertEqual(result.sdnn, 17.825, accuracy: 0.001, "SDNN does not care about order")
    }

    func testPoorWindowsGiveNothing() {
        let intervals = Self.intervals(Self.recorded)
        // 15.9 s of clean beats do not cover half of a 5-minute window.
        guard case .failure(.tooLittleCovered) = HRVStatistics.compute(intervals, windowSeconds: 300) else {
            return XCTFail("a 5-minute window with 16 s of beats gave a figure")
        }
        // Half of them artefacts.
        let noisy = Self.intervals([1000, 400, 1010, 2100, 990, 380, 1005, 1990, 1000, 450])
        guard case .failure(.tooManyArtefacts) = HRVStatistics.compute(noisy, windowSeconds: 10) else {
            return XCTFail("a window of artefacts gave a figure")
        }
        guard case .failure(.tooFewBeats) = HRVStatistics.compute(Self.intervals([1000, 1010]), windowSeconds: 2) else {
            return XCTFail("two beats gave a figure")
        }
    }
}
