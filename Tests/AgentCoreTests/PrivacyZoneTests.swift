import AgentCore
import Foundation
import XCTest

/// `[[location.exclude]]`: the keys are validated like every other, and the geometry
/// holds at the edges, near the poles and across the antimeridian.
final class PrivacyZoneTests: XCTestCase {
    /// Metres per degree of latitude on the mean sphere.
    let metresPerDegree = Geodesy.earthRadius * .pi / 180

    func testZonesAreReadWithTheirDefaults() throws {
        let config = try AgentConfig(toml: """
            [location]
            interval = 5
            [[location.exclude]]
            name = "home"
            latitude = 52.52
            longitude = 13.405
            radius = 200
            [[location.exclude]]
            latitude = -33.8
            longitude = 151
            radius = 10000
            action = "coarsen"
            """, file: "/etc/ariata/agent.toml")
        XCTAssertEqual(config.location.exclude, [
            PrivacyZone(latitude: 52.52, longitude: 13.405, radius: 200, name: "home", action: .skip),
            PrivacyZone(latitude: -33.8, longitude: 151, radius: 10_000, name: nil, action: .coarsen),
        ])
    }

    func testBadZonesNameFileKeyAndWhatIsAllowed() {
        let zone = "[[location.exclude]]\n"
        let cases: [(toml: String, key: String, fragment: String)] = [
            (zone + "latitude = 1\nlongitude = 2\nradius = 49", "location.exclude[1].radius", "out of range: allowed 50.0 to 10000.0 metres"),
            (zone + "latitude = 1\nlongitude = 2\nradius = 10001", "location.exclude[1].radius", "out of range"),
            (zone + "latitude = 91\nlongitude = 2\nradius = 100", "location.exclude[1].latitude", "out of range: allowed -90.0 to 90.0 degrees"),
            (zone + "latitude = 1\nlongitude = -181\nradius = 100", "location.exclude[1].longitude", "out of range"),
            (zone + "longitude = 2\nradius = 100", "location.exclude[1].latitude", "missing"),
            (zone + "latitude = 1\nlongitude = 2", "location.exclude[1].radius", "missing"),
            (zone + "latitude = \"52N\"\nlongitude = 2\nradius = 100", "location.exclude[1].latitude", "expected a number"),
            (zone + "latitude = 1\nlongitude = 2\nradius = 100\naction = \"blur\"", "location.exclude[1].action", "use one of \"skip\", \"coarsen\""),
            (zone + "latitude = 1\nlongitude = 2\nradius = 100\nradious = 5", "location.exclude[1].radious", "unknown key"),
            ("[location]\nexclude = 5", "location.exclude", "expected an array of tables"),
        ]
        for c in cases {
            XCTAssertThrowsError(try AgentConfig(toml: c.toml, file: "/etc/ariata/agent.toml"), c.toml) { error in
                guard let e = error as? ConfigError else { return XCTFail("\(error) is not a ConfigError") }
                XCTAssertEqual(e.key, c.key, c.toml)
                XCTAssertTrue(e.description.contains(c.fragment), "\(e.description) lacks \(c.fragment)")
                XCTAssertTrue(e.description.hasPrefix("/etc/ariata/agent.toml: "), e.description)
            }
        }
    }

    func testTheEdgeOfAZone() {
        let zone = PrivacyZone(latitude: 48.0, longitude: 11.0, radius: 100)
        // North along the meridian, where a degree of latitude is a known length.
        XCTAssertTrue(zone.contains(latitude: 48.0 + 99.9 / metresPerDegree, longitude: 11.0))
        XCTAssertTrue(zone.contains(latitude: 48.0 + 99.999 / metresPerDegree, longitude: 11.0), "the edge is inside")
        XCTAssertFalse(zone.contains(latitude: 48.0 + 100.01 / metresPerDegree, longitude: 11.0))
        // East: a degree of longitude is shorter by cos(latitude), and haversine knows it.
        let eastDegree = metresPerDegree * cos(48.0 * .pi / 180)
        XCTAssertTrue(zone.contains(latitude: 48.0, longitude: 11.0 + 99.9 / eastDegree))
        XCTAssertFalse(zone.contains(latitude: 48.0, longitude: 11.0 + 100.1 / eastDegree))
        // A plain degrees-as-metres check would take this point (150 m east, 0.00135°
        // of longitude at 48°N, less than 100 m of latitude) as inside.
        XCTAssertFalse(zone.contains(latitude: 48.0, longitude: 11.0 + 150 / eastDegree))
    }

    func testAcrossTheAntimeridian() {
        let zone = PrivacyZone(latitude: -16.5, longitude: 179.999, radius: 500, name: "Taveuni")
        let eastDegree = metresPerDegree * cos(16.5 * .pi / 180)
        // 0.002° further east is 180.001°, written -179.999: about 213 m away.
        XCTAssertTrue(zone.contains(latitude: -16.5, longitude: -179.999))
        XCTAssertEqual(Geodesy.distance(fromLatitude: -16.5, longitude: 179.999, toLatitude: -16.5, longitude: -179.999),
                       0.002 * eastDegree, accuracy: 0.5)
        XCTAssertFalse(zone.contains(latitude: -16.5, longitude: -179.99), "about 1 km east across the line")
        XCTAssertFalse(zone.contains(latitude: -16.5, longitude: 0.0), "the other side of the earth")
    }

    func testNearThePole() {
        let zone = PrivacyZone(latitude: 89.999, longitude: 0, radius: 300)
        // At 89.999° the parallel is tiny: the point at longitude 180 is only ~222 m away.
        XCTAssertTrue(zone.contains(latitude: 89.999, longitude: 180))
        XCTAssertTrue(zone.contains(latitude: 90, longitude: 0))
    }

    func testSkipWinsOverCoarsenAndCoarseningRoundsToAHundredthOfADegree() {
        let zones = PrivacyZones([
            PrivacyZone(latitude: 52.52, longitude: 13.40, radius: 5_000, name: "city", action: .coarsen),
            PrivacyZone(latitude: 52.52, longitude: 13.40, radius: 100, name: "home"),
        ])
        XCTAssertEqual(zones.decide(latitude: 52.5201, longitude: 13.4001), .skip(zones.zones[1]))
        XCTAssertEqual(zones.decide(latitude: 52.53, longitude: 13.41), .coarsen(zones.zones[0]))
        XCTAssertEqual(zones.decide(latitude: 52.70, longitude: 13.40), .keep)
        XCTAssertEqual(PrivacyZones.coarsen(52.526_789), 52.53, accuracy: 1e-9)
        XCTAssertEqual(PrivacyZones.coarsen(-179.994_9), -179.99, accuracy: 1e-9)
        XCTAssertEqual(PrivacyZones.coarsen(13.404_954), 13.40, accuracy: 1e-9)
    }

    func testCoarseningKeepsTheLargerOfTheFixsAccuracyAndTheZones() {
        XCTAssertEqual(PrivacyZones.coarsen(accuracy: 5), PrivacyZones.coarsenedAccuracy)
        XCTAssertEqual(PrivacyZones.coarsen(accuracy: nil), PrivacyZones.coarsenedAccuracy)
        XCTAssertEqual(PrivacyZones.coarsen(accuracy: 25_000), 25_000, "a fix coarser than the rounding keeps its own accuracy")
        XCTAssertEqual(PrivacyZones.coarsenedAccuracy, 1_000)
    }
}
