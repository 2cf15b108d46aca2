import AgentCore
@testable import Capture
import XCTest

final class LocationRecordTests: XCTestCase {
    private let now = Date(timeIntervalSince1970: 1_790_000_000)

    private func object(_ record: NewRecord) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: record.payload) as? [String: Any])
    }

    func testA3DFixCarriesEveryContractField() throws {
        let fix = LocationFix(mode: 3, time: FixTime(seconds: 1_789_999_990, nanoseconds: 250_000_000),
                         latitude: 52.520008, longitude: -13.404954, altitude: 34.5, speed: 5.144, course: 45.25,
                         horizontalAccuracy: 17.1, verticalAccuracy: 34.5, satellitesUsed: 8, source: .gpsd)
        let id = UUID()
        let record = try LocationRecord.make(from: fix, now: now, id: id)
        XCTAssertEqual(record.stream, .location)
        XCTAssertEqual(record.capturedAt, fix.time.date)
        let json = try object(record)
        XCTAssertEqual(Set(json.keys), ["id", "timestamp", "latitude", "longitude", "altitude", "speed", "course",
                                        "horizontal_accuracy", "vertical_accuracy", "fix_mode", "satellites_used",
                                        "location_source"])
        XCTAssertEqual(json["location_source"] as? String, "gpsd")
        XCTAssertEqual(json["id"] as? String, id.uuidString.lowercased())
        XCTAssertEqual(json["timestamp"] as? String, "2026-09-21T14:13:10.250Z")
        XCTAssertEqual(json["latitude"] as? Double, 52.520008)
        XCTAssertEqual(json["longitude"] as? Double, -13.404954)
        XCTAssertEqual(json["altitude"] as? Double, 34.5)
        XCTAssertEqual(json["speed"] as? Double, 5.144)
        XCTAssertEqual(json["course"] as? Double, 45.25)
        XCTAssertEqual(json["horizontal_accuracy"] as? Double, 17.1)
        XCTAssertEqual(json["vertical_accuracy"] as? Double, 34.5)
        XCTAssertEqual(json["fix_mode"] as? Int, 3)
        XCTAssertEqual(json["satellites_used"] as? Int, 8)
    }

    func testFieldsGpsdDidNotKnowAreAbsentNotZero() throws {
        let fix = LocationFix(mode: 2, time: FixTime(seconds: 1_789_999_990, nanoseconds: 0), latitude: 1, longitude: 2, source: .gpsd)
        let json = try object(LocationRecord.make(from: fix, now: now))
        XCTAssertEqual(Set(json.keys), ["id", "timestamp", "latitude", "longitude", "fix_mode", "location_source"])
        XCTAssertEqual(json["fix_mode"] as? Int, 2)
    }

    /// GeoClue says nothing of 2D or 3D, and its time is the system clock's: the plain
    /// time rule, even while the clock is not trusted.
    func testAGeoClueFixHasItsSourceAndNoFixMode() throws {
        let fix = LocationFix(mode: nil, time: FixTime(seconds: 1_789_999_990, nanoseconds: 0), latitude: 1, longitude: 2,
                         horizontalAccuracy: 40, source: .geoclue)
        let json = try object(LocationRecord.make(from: fix, now: now))
        XCTAssertEqual(Set(json.keys), ["id", "timestamp", "latitude", "longitude", "horizontal_accuracy", "location_source"])
        XCTAssertEqual(json["location_source"] as? String, "geoclue")
        let in1970 = LocationFix(mode: nil, time: FixTime(seconds: 60, nanoseconds: 0), latitude: 1, longitude: 2, source: .geoclue)
        XCTAssertThrowsError(try LocationRecord.make(from: in1970, now: Date(timeIntervalSince1970: 60), clockTrusted: false))
    }

    /// How the fix was made goes where each server keeps it: top-level for the archives,
    /// inside `raw_data` for the transforms (they keep it as `metadata.ios_raw`).
    func testAFixWithItsMethodCarriesItTopLevelAndInRawData() throws {
        let fix = LocationFix(mode: nil, time: FixTime(seconds: 1_789_999_990, nanoseconds: 0), latitude: 1, longitude: 2,
                              horizontalAccuracy: 40, method: LocationMethod(.wifi, basis: .description), source: .geoclue)
        let json = try object(LocationRecord.make(from: fix, now: now))
        XCTAssertEqual(json["location_method"] as? String, "wifi")
        let raw = try XCTUnwrap(json["raw_data"] as? [String: Any])
        XCTAssertEqual(raw["location_method"] as? String, "wifi")
        XCTAssertEqual(raw["location_method_basis"] as? String, "description")
        var inferred = fix
        inferred.method = LocationMethod(.ip, basis: .accuracy)
        let guessed = try XCTUnwrap(try object(LocationRecord.make(from: inferred, now: now))["raw_data"] as? [String: Any])
        XCTAssertEqual(guessed["location_method_basis"] as? String, "accuracy", "an inference says it is one")
    }

    func testTimesTheServerWouldRejectAreRefused() {
        let before2000 = LocationFix(mode: 3, time: FixTime(seconds: 900_000_000, nanoseconds: 0), latitude: 1, longitude: 2, source: .gpsd)
        XCTAssertThrowsError(try LocationRecord.make(from: before2000, now: now))
        let ahead = LocationFix(mode: 3, time: FixTime(seconds: 1_790_000_301, nanoseconds: 0), latitude: 1, longitude: 2, source: .gpsd)
        XCTAssertThrowsError(try LocationRecord.make(from: ahead, now: now)) { error in
            XCTAssertTrue("\(error)".contains("timedatectl"), "\(error)")
        }
        let justInside = LocationFix(mode: 3, time: FixTime(seconds: 1_790_000_299, nanoseconds: 0), latitude: 1, longitude: 2, source: .gpsd)
        XCTAssertNoThrow(try LocationRecord.make(from: justInside, now: now))
    }

    func testAnUnsetSystemClockDefersToGPSTime() throws {
        // An SBC without RTC before NTP: the clock says 1970, the satellites know better.
        let bootClock = Date(timeIntervalSince1970: 60)
        let fix = LocationFix(mode: 3, time: FixTime(seconds: 1_790_000_000, nanoseconds: 0), latitude: 1, longitude: 2, source: .gpsd)
        XCTAssertNoThrow(try LocationRecord.make(from: fix, now: bootClock))
        let bogus = LocationFix(mode: 3, time: FixTime(seconds: 100, nanoseconds: 0), latitude: 1, longitude: 2, source: .gpsd)
        XCTAssertThrowsError(try LocationRecord.make(from: bogus, now: bootClock))
    }
}
