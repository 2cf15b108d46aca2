import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// Privacy zones against the real daemon and a real gpsd fed the rig's drive: the fixes
/// inside a zone are missing, exactly those; in a "coarsen" zone they come rounded.
final class PrivacyZoneDaemonTests: XCTestCase {
    /// Metres between two points, by the equirectangular approximation: independent of
    /// the agent's haversine, and within millimetres of it at a few hundred metres.
    func metres(_ a: (Double, Double), _ b: (Double, Double)) -> Double {
        let r = 6_371_008.8, rad = Double.pi / 180
        let x = (b.1 - a.1) * rad * cos((a.0 + b.0) / 2 * rad)
        let y = (b.0 - a.0) * rad
        return r * (x * x + y * y).squareRoot()
    }

    func testFixesOfATrackThroughAZoneAreMissingExactlyInsideIt() throws {
        // The rig feeds this drive (its positions do not depend on the start time), two
        // epochs a second from when the rig is made (the fix times run ahead of the clock,
        // by under a minute at epoch 100, within the 5 minutes the agent accepts); the
        // daemon samples every second, so every other epoch, as at one epoch a second
        // sampled every 2 s.
        let drive = NMEADrive.synthetic(epochs: 600, start: Date())
        let home = (drive[30].latitude, drive[30].longitude), homeRadius = 70.0
        let cafe = (drive[75].latitude, drive[75].longitude), cafeRadius = 60.0
        XCTAssertGreaterThan(metres(home, cafe), homeRadius + cafeRadius + 100, "the zones are apart")
        let rig = try DaemonRig(checkInterval: 1, extraConfig: """
            [[location.exclude]]
            name = "home"
            latitude = \(home.0)
            longitude = \(home.1)
            radius = \(homeRadius)
            [[location.exclude]]
            name = "cafe"
            latitude = \(cafe.0)
            longitude = \(cafe.1)
            radius = \(cafeRadius)
            action = "coarsen"
            """, locationInterval: 1, drivePeriod: 0.5)
        try rig.startAgent()
        let database = try rig.openDatabase()

        /// The drive's epoch a written fix is (exact positions: NMEA's own rounding is in the drive).
        func epochIndex(_ latitude: Double, _ longitude: Double) -> Int? {
            drive.firstIndex { abs($0.latitude - latitude) < 1e-7 && abs($0.longitude - longitude) < 1e-7 }
        }
        func fields() throws -> [[String: Any]] {
            try database.recordQueue.records(stream: .location).compactMap {
                try JSONSerialization.jsonObject(with: $0.payload) as? [String: Any]
            }
        }
        try waitUntil("the drive to pass both zones", timeout: 180) {
            try fields().contains { f in
                guard let lat = f["latitude"] as? Double, let lon = f["longitude"] as? Double else { return false }
                return (epochIndex(lat, lon) ?? 0) >= 100
            }
        }
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        Thread.sleep(forTimeInterval: 2)   // one more maintenance round stores the counters
        let report = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)

        var keptIndexes: [Int] = []
        var coarsened = 0
        for f in try fields() {
            let lat = try XCTUnwrap(f["latitude"] as? Double), lon = try XCTUnwrap(f["longitude"] as? Double)
            if let index = epochIndex(lat, lon) {
                let position = (lat, lon)
                XCTAssertGreaterThan(metres(position, home), homeRadius - 0.5, "epoch \(index) written inside home")
                XCTAssertGreaterThan(metres(position, cafe), cafeRadius - 0.5, "epoch \(index) written precisely inside the cafe zone")
                keptIndexes.append(index)
            } else {
                // Not a position of the drive: a coarsened fix from the cafe zone.
                coarsened += 1
                XCTAssertEqual(lat * 100, (lat * 100).rounded(), accuracy: 1e-6, "latitude \(lat) not rounded to 0.01°")
                XCTAssertEqual(lon * 100, (lon * 100).rounded(), accuracy: 1e-6, "longitude \(lon) not rounded to 0.01°")
                XCTAssertLessThan(metres((lat, lon), cafe), 1_200, "a coarsened fix is near its zone")
                XCTAssertNil(f["speed"]); XCTAssertNil(f["course"]); XCTAssertNil(f["altitude"])
                XCTAssertEqual(f["horizontal_accuracy"] as? Double, 1_000)
            }
        }
        let first = try XCTUnwrap(keptIndexes.min()), last = try XCTUnwrap(keptIndexes.max())
        XCTAssertLessThan(first, 25, "the daemon recorded before home")
        XCTAssertGreaterThan(coarsened, 0, "fixes in the cafe zone come coarsened")
        // Nothing is missing outside the zones: every epoch clearly outside both has a
        // written fix within three epochs (sampling every 2 s takes every other epoch).
        let kept = Set(keptIndexes)
        var insideHome = 0
        for index in first...last {
            let position = (drive[index].latitude, drive[index].longitude)
            let dHome = metres(position, home), dCafe = metres(position, cafe)
            if dHome < homeRadius - 0.5 { insideHome += 1 }
            guard dHome > homeRadius + 0.5, dCafe > cafeRadius + 0.5 else { continue }
            XCTAssertTrue((index - 3...index + 3).contains { kept.contains($0) },
                          "epoch \(index), \(Int(dHome)) m from home, is missing with no zone to explain it")
        }
        XCTAssertGreaterThan(insideHome, 4, "the track crossed home")

        let location = try XCTUnwrap(report.streams.first { $0.name == "location" })
        let skipped = try XCTUnwrap(location.privacySkipped)
        XCTAssertGreaterThan(skipped, 0)
        XCTAssertLessThanOrEqual(skipped, insideHome, "one skipped fix per sampling tick inside, at most")
        XCTAssertGreaterThanOrEqual(location.privacyCoarsened ?? 0, coarsened)
        // The log names the zone, never where it is.
        XCTAssertTrue(rig.agentLog.contains("in privacy zone home"), rig.agentLog)
        XCTAssertFalse(rig.agentLog.contains(String(format: "%.4f", home.0)), "the zone's position reached the log")
    }
}
