@testable import Capture
import XCTest

/// The Heart Rate Measurement characteristic (0x2A37) byte by byte, as the Heart Rate
/// Service specification lays it out.
final class HeartRateMeasurementTests: XCTestCase {
    func testEightBitHeartRateWithoutAnythingElse() throws {
        let m = try HeartRateMeasurement(bytes: [0x00, 72])
        XCTAssertEqual(m, HeartRateMeasurement(heartRate: 72, contact: .notSupported))
    }

    func testSixteenBitHeartRate() throws {
        // Flags bit 0: a 16-bit value, little-endian: 0x012C = 300.
        XCTAssertEqual(try HeartRateMeasurement(bytes: [0x01, 0x2C, 0x01]).heartRate, 300)
        XCTAssertEqual(try HeartRateMeasurement(bytes: [0x01, 0x48, 0x00]).heartRate, 72)
    }

    func testContactBits() throws {
        XCTAssertEqual(try HeartRateMeasurement(bytes: [0x06, 60]).contact, .detected)
        XCTAssertEqual(try HeartRateMeasurement(bytes: [0x04, 60]).contact, .notDetected)
        // Bit 1 without bit 2 (supported) means nothing: the sensor cannot tell.
        XCTAssertEqual(try HeartRateMeasurement(bytes: [0x02, 60]).contact, .notSupported)
        XCTAssertEqual(try HeartRateMeasurement(bytes: [0x00, 60]).contact, .notSupported)
    }

    func testEnergyExpendedAndRRIntervals() throws {
        // Polar H10's shape: contact detected, RR present (0x16); with energy (0x1E).
        let m = try HeartRateMeasurement(bytes: [0x1E, 64, 0x10, 0x27, 0x00, 0x04, 0xF2, 0x03])
        XCTAssertEqual(m.heartRate, 64)
        XCTAssertEqual(m.contact, .detected)
        XCTAssertEqual(m.energyExpended, 10_000)
        XCTAssertEqual(m.rrIntervals, [1024, 1010])
        XCTAssertEqual(m.rrMilliseconds[0], 1000, accuracy: 1e-9)
        XCTAssertEqual(m.rrMilliseconds[1], 986.328125, accuracy: 1e-9)

        let rrOnly = try HeartRateMeasurement(bytes: [0x16, 58, 0x00, 0x04])
        XCTAssertNil(rrOnly.energyExpended)
        XCTAssertEqual(rrOnly.rrIntervals, [1024])
        let wide = try HeartRateMeasurement(bytes: [0x19, 0x40, 0x00, 0x05, 0x00, 0x00, 0x04])
        XCTAssertEqual(wide, HeartRateMeasurement(heartRate: 64, energyExpended: 5, rrIntervals: [1024]))
    }

    func testRoundTripThroughBytes() throws {
        for m in [HeartRateMeasurement(heartRate: 61), HeartRateMeasurement(heartRate: 300, contact: .detected),
                  HeartRateMeasurement(heartRate: 55, contact: .notDetected, energyExpended: 12, rrIntervals: [1100, 1090, 1120])] {
            XCTAssertEqual(try HeartRateMeasurement(bytes: m.bytes()), m)
            XCTAssertEqual(try HeartRateMeasurement(bytes: m.bytes(wide: true)), m)
        }
    }

    func testMalformedNotificationsAreRefused() {
        for bytes: [UInt8] in [[], [0x00], [0x01, 0x48], [0x08, 60, 0x10], [0x10, 60, 0x00, 0x04, 0x01]] {
            XCTAssertThrowsError(try HeartRateMeasurement(bytes: bytes), "\(bytes)")
        }
    }
}
