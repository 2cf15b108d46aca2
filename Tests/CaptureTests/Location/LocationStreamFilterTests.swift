import AgentCore
@testable import Capture
import Foundation
import XCTest

/// What the stream keeps back, fed fixes as a source would (`received`, then `tick`):
/// fixes coarser than `max_accuracy`, a receiver standing still, and what a coarsening
/// privacy zone writes.
final class LocationStreamFilterTests: XCTestCase {
    private let now = Int(Date().timeIntervalSince1970) - 600

    private func fix(_ second: Int, latitude: Double = 52.52, accuracy: Double?, source: FixSource = .geoclue) -> LocationFix {
        LocationFix(mode: nil, time: FixTime(seconds: now + second, nanoseconds: 0), latitude: latitude, longitude: 13.40,
                    horizontalAccuracy: accuracy, source: source)
    }

    private func feed(_ fixture: LocationFixture, _ fix: LocationFix) {
        _ = fixture.stream.received(fix)
        fixture.stream.tick()
    }

    func testAFixCoarserThanMaxAccuracyIsNotWrittenButCountedAndItsAccuracyKept() throws {
        let fixture = try LocationFixture(port: 1) { $0.source = .geoclue }
        feed(fixture, fix(0, accuracy: 25_000))
        feed(fixture, fix(10, accuracy: 25_000))
        XCTAssertEqual(try fixture.records().count, 0, "an IP-address lookup is no position")
        XCTAssertEqual(fixture.stream.counters()[StreamCounter.tooCoarse], 2)
        feed(fixture, fix(20, accuracy: 40))
        // Without accuracy nothing says it is coarse.
        feed(fixture, fix(30, accuracy: nil))
        feed(fixture, fix(40, accuracy: 1_000))
        let records = try fixture.records()
        XCTAssertEqual(records.map { $0["horizontal_accuracy"] as? Double }, [40, nil, 1_000])
        XCTAssertEqual(fixture.stream.counters()[StreamCounter.tooCoarse], 2)
        feed(fixture, fix(50, accuracy: 1_001))
        XCTAssertEqual(fixture.stream.counters()[StreamCounter.tooCoarse], 3)
        XCTAssertEqual(fixture.log.count(.notice, containing: "gives only coarse fixes"), 2, "once per run of coarse fixes")
    }

    func testMaxAccuracyZeroKeepsEveryFix() throws {
        let fixture = try LocationFixture(port: 1) { $0.source = .geoclue; $0.maxAccuracy = 0 }
        feed(fixture, fix(0, accuracy: 25_000))
        XCTAssertEqual(try fixture.records().first?["horizontal_accuracy"] as? Double, 25_000)
        XCTAssertEqual(fixture.stream.counters()[StreamCounter.tooCoarse], 0)
    }

    func testACoarsenedFixKeepsItsOwnAccuracyWhenCoarserThanTheZones() throws {
        let fixture = try LocationFixture(port: 1) { c in
            c.source = .geoclue
            c.maxAccuracy = 0
            c.exclude = [PrivacyZone(latitude: 52.52, longitude: 13.40, radius: 5_000, name: "city", action: .coarsen)]
        }
        feed(fixture, fix(0, accuracy: 5_000))
        feed(fixture, fix(10, accuracy: 8))
        XCTAssertEqual(try fixture.records().map { $0["horizontal_accuracy"] as? Double }, [5_000, 1_000])
    }

    func testAStandingReceiverIsThinnedAndAGeoClueFixIsNot() throws {
        var tuning = LocationTuning()
        tuning.stationaryWindow = 60
        let fixture = try LocationFixture(port: 1, interval: 10, tuning: tuning) { $0.stationaryInterval = 60 }
        // A fix a second, a tick every ten, as gpsd's reader gives them.
        for second in 0..<300 {
            _ = fixture.stream.received(fix(second, latitude: 52.52 + Double(second % 3) * 1e-5, accuracy: 8, source: .gpsd))
            if second % 10 == 9 { fixture.stream.tick() }
        }
        let written = try fixture.records().count
        XCTAssertTrue((8...11).contains(written), "six ticks before a full window, then one a minute: \(written)")
        XCTAssertEqual(fixture.stream.counters()[StreamCounter.stationaryThinned], 30 - written)

        let geoclue = try LocationFixture(port: 1, interval: 10, tuning: tuning) { $0.source = .geoclue; $0.stationaryInterval = 60 }
        for second in stride(from: 0, to: 300, by: 10) {
            feed(geoclue, fix(second, accuracy: 8))
        }
        XCTAssertEqual(try geoclue.records().count, 30, "GeoClue sends a fix only on a move: none is thinned")
        XCTAssertEqual(geoclue.stream.counters()[StreamCounter.stationaryThinned], 0)
    }
}
