@testable import Capture
import DBus
import XCTest

/// A GeoClue Location object's properties as a fix: its markers for "unknown" are not
/// values, and its HDOP-table accuracies are not measurements.
final class GeoClueFixTests: XCTestCase {
    private func properties(accuracy: Double = 40, altitude: Double = -Double.greatestFiniteMagnitude,
                            speed: Double = -1, heading: Double = -1, latitude: Double = 52.5,
                            description: String = "") -> [String: DBusValue] {
        ["Latitude": .double(latitude), "Longitude": .double(13.4), "Accuracy": .double(accuracy),
         "Altitude": .double(altitude), "Speed": .double(speed), "Heading": .double(heading), "Description": .string(description),
         "Timestamp": .structure([.uint64(1_795_728_960), .uint64(250_000)])]
    }

    func testUnknownMarkersAreLeftOut() throws {
        let fix = try XCTUnwrap(GeoClueFix(properties: properties()))
        XCTAssertEqual(fix.accuracy, 40)
        XCTAssertNil(fix.altitude)
        XCTAssertNil(fix.speed)
        XCTAssertNil(fix.heading)
        XCTAssertEqual(fix.time, FixTime(seconds: 1_795_728_960, nanoseconds: 250_000_000))
        XCTAssertEqual(fix.fix.source, .geoclue)
        XCTAssertNil(fix.fix.mode, "GeoClue does not say 2D or 3D")
    }

    func testKnownValuesAreKept() throws {
        let fix = try XCTUnwrap(GeoClueFix(properties: properties(altitude: 35, speed: 0, heading: 270)))
        XCTAssertEqual(fix.altitude, 35)
        XCTAssertEqual(fix.speed, 0)
        XCTAssertEqual(fix.heading, 270)
    }

    func testHDOPTableAccuraciesAreNotMeasurements() {
        for figure in [0.0, 1, 3] {
            XCTAssertNil(GeoClueFix(properties: properties(accuracy: figure))?.accuracy, "\(figure)")
        }
        XCTAssertEqual(GeoClueFix(properties: properties(accuracy: 50))?.accuracy, 50)
    }

    func testWhatIsNotAPositionIsNoFix() {
        XCTAssertNil(GeoClueFix(properties: properties(latitude: 91)))
        var noTime = properties()
        noTime["Timestamp"] = nil
        XCTAssertNil(GeoClueFix(properties: noTime))
    }

    /// GeoClue 2.7's descriptions, as its web locator and sources write them.
    func testTheDescriptionSaysHowTheFixWasMade() throws {
        let told: [(String, LocationMethod.Kind?)] = [
            ("WiFi", .wifi), ("3GPP + WiFi", .wifi), ("3GPP", .cell), ("CDMA", .cell), ("GeoIP", .ip),
            ("ipf fallback (from WiFi data)", .ip), ("lacf fallback (from 3GPP data)", .cell),
            ("Static location", .static), ("something new", nil), ("xyz fallback (from WiFi data)", nil),
        ]
        for (description, kind) in told {
            let method = try XCTUnwrap(GeoClueFix(properties: properties(description: description))).method
            XCTAssertEqual(method?.kind, kind, description)
            if kind != nil { XCTAssertEqual(method?.basis, .description, description) }
            XCTAssertEqual(GeoClueFix(properties: properties(description: description))?.fix.method, method)
        }
    }

    /// GeoClue 2.6 leaves the description empty: only a fix as coarse as its city level is
    /// taken for an IP lookup, and marked as inferred; finer ones have no method.
    func testAnEmptyDescriptionTellsOnlyAnIPLookupByItsAccuracy() throws {
        let coarse = try XCTUnwrap(GeoClueFix(properties: properties(accuracy: 25_000)))
        XCTAssertEqual(coarse.method, LocationMethod(.ip, basis: .accuracy))
        XCTAssertEqual(coarse.method?.textForm, "ip?")
        XCTAssertNil(try XCTUnwrap(GeoClueFix(properties: properties(accuracy: 40))).method)
        XCTAssertNil(try XCTUnwrap(GeoClueFix(properties: properties(accuracy: 14_999))).method, "a cell's area can be this coarse")
        XCTAssertEqual(GeoClueFix(properties: properties(accuracy: 25_000, description: "lacf fallback (from 3GPP data)"))?.method?.kind,
                       .cell, "what GeoClue says wins over the inference")
        XCTAssertEqual(LocationMethod(textForm: "ip?"), LocationMethod(.ip, basis: .accuracy))
        XCTAssertEqual(LocationMethod(textForm: "wifi"), LocationMethod(.wifi, basis: .description))
        XCTAssertNil(LocationMethod(textForm: "radar"))
    }
}
