import AgentCore
@testable import Capture
import DBus
import Foundation
import Synchronization
import TestRigs
import XCTest

/// The location stream against Debian's real GeoClue on a private system bus, fed by the
/// test's own NMEA socket (GeoClue's network-NMEA source).
final class LocationStreamGeoClueTests: XCTestCase {
    private func tuning(_ rig: GeoClueRig) -> LocationTuning {
        var tuning = LocationTuning()
        tuning.geoClueBus = .address(rig.bus.address)
        tuning.geoClueRetry = Backoff(base: 0.2, cap: 1)
        tuning.gpsdProbeInterval = 1
        tuning.gpsdProbeTimeout = 1
        tuning.geoClueStartTimeout = 2
        return tuning
    }

    private func waitForRecords(_ fixture: LocationFixture, atLeast count: Int, timeout: TimeInterval = 20,
                                rig: GeoClueRig) throws -> [[String: Any]] {
        do {
            try waitUntil("\(count) location records from GeoClue", timeout: timeout) { try fixture.records().count >= count }
        } catch {
            print("GeoClue's log:\n\(rig.log)\nthe stream's log:\n\(fixture.log.entries.withLock { $0.map(\.message) }.joined(separator: "\n"))")
            throw error
        }
        return try fixture.records()
    }

    /// As the system service: its own GeoClue agent, fixes written with their source and
    /// without what GeoClue does not know.
    func testFixesFromGeoClueAreRecordedWithTheirSource() throws {
        let rig = try GeoClueRig(position: (52.5, 13.4))
        let fixture = try LocationFixture(port: 1, interval: 1, tuning: tuning(rig)) { $0.source = .geoclue }
        fixture.stream.start()
        let records = try waitForRecords(fixture, atLeast: 2, rig: rig)
        let first = try XCTUnwrap(records.first)
        XCTAssertEqual(first["location_source"] as? String, "geoclue")
        XCTAssertEqual(try XCTUnwrap(first["latitude"] as? Double), 52.5, accuracy: 1e-4)
        XCTAssertEqual(try XCTUnwrap(first["longitude"] as? Double), 13.4, accuracy: 1e-4)
        XCTAssertNil(first["fix_mode"], "GeoClue does not say 2D or 3D")
        // Its NMEA source turns the HDOP of 1.2 into "1 m": not a measurement.
        XCTAssertNil(first["horizontal_accuracy"])
        XCTAssertNil(first["course"], "GeoClue's -1 is unknown")
        let status = fixture.stream.status()
        XCTAssertEqual(status.source, .geoclue)
        XCTAssertTrue(status.connected)
        XCTAssertEqual(fixture.stream.liveness(), .healthy)
        XCTAssertEqual(fixture.log.count(.info, containing: "as its own GeoClue agent"), 1)
    }

    /// A GeoClue fix coarser than max_accuracy is not written but counted, with its
    /// accuracy kept for status; a fine one afterwards is written.
    func testAFixCoarserThanMaxAccuracyIsNotWritten() throws {
        let rig = try GeoClueRig(position: (52.5, 13.4))
        rig.report(hdop: 25)
        let fixture = try LocationFixture(port: 1, interval: 1, tuning: tuning(rig)) {
            $0.source = .geoclue
            $0.maxAccuracy = 200
        }
        fixture.stream.start()
        do {
            try waitUntil("a coarse fix from GeoClue", timeout: 20) { (fixture.stream.counters()[StreamCounter.tooCoarse] ?? 0) >= 1 }
        } catch {
            print("GeoClue's log:\n\(rig.log)")
            throw error
        }
        XCTAssertEqual(try fixture.records().count, 0, "no record from a fix over max_accuracy")
        let seen = try XCTUnwrap(fixture.stream.details()[StreamCounter.lastAccuracy].flatMap { Double($0) })
        XCTAssertGreaterThan(seen, 200, "the coarse accuracy GeoClue gave")
        XCTAssertEqual(fixture.log.count(.notice, containing: "GeoClue gives only coarse fixes"), 1)

        rig.report(hdop: nil)
        rig.move(to: (52.51, 13.4))
        let records = try waitForRecords(fixture, atLeast: 1, rig: rig)
        XCTAssertEqual(try XCTUnwrap(records.last?["latitude"] as? Double), 52.51, accuracy: 1e-4)
        XCTAssertLessThanOrEqual(records.last?["horizontal_accuracy"] as? Double ?? 0, 200)
    }

    /// GeoClue's distance threshold: moves under it give no record, one over it does.
    func testTheDistanceThresholdHoldsBackSmallMoves() throws {
        let rig = try GeoClueRig(position: (52.5, 13.4))
        let fixture = try LocationFixture(port: 1, interval: 1, tuning: tuning(rig)) {
            $0.source = .geoclue
            $0.distanceThreshold = 500
        }
        fixture.stream.start()
        _ = try waitForRecords(fixture, atLeast: 1, rig: rig)
        rig.move(to: (52.5009, 13.4))  // 100 m north
        Thread.sleep(forTimeInterval: 4)
        XCTAssertEqual(try fixture.records().count, 1, "a 100 m move under a 500 m threshold")
        rig.move(to: (52.51, 13.4))  // 1.1 km north
        let records = try waitForRecords(fixture, atLeast: 2, rig: rig)
        XCTAssertEqual(try XCTUnwrap(records.last?["latitude"] as? Double), 52.51, accuracy: 1e-4)
    }

    /// A GeoClue that does not list the agent in its whitelist: a status that says which
    /// line to add, and no crash; the stream keeps asking.
    func testAnAgentOutsideTheWhitelistIsToldWhatToChange() throws {
        let rig = try GeoClueRig(agentWhitelist: ["gnome-shell"])
        let fixture = try LocationFixture(port: 1, interval: 1, tuning: tuning(rig)) { $0.source = .geoclue }
        fixture.stream.start()
        try waitUntil("the stream to report GeoClue's refusal", timeout: 20) {
            if case .unreachable = fixture.stream.status().link { return true }
            return false
        }
        guard case .unhealthy(let reason, _) = fixture.stream.liveness() else { return XCTFail("healthy without GeoClue") }
        XCTAssertTrue(reason.contains("whitelist") && reason.contains("/etc/geoclue"), reason)
        XCTAssertEqual(try fixture.records().count, 0)
    }

    /// GeoClue stopped and started again (a package upgrade): the outage is in the status,
    /// and fixes come again without a restart of the stream.
    func testGeoClueGoingAwayAndComingBackIsTakenUpAgain() throws {
        let rig = try GeoClueRig()
        let fixture = try LocationFixture(port: 1, interval: 1, tuning: tuning(rig)) { $0.source = .geoclue }
        fixture.stream.start()
        _ = try waitForRecords(fixture, atLeast: 1, rig: rig)
        rig.stopGeoClue()
        try waitUntil("the stream to notice GeoClue left", timeout: 10) {
            if case .unreachable = fixture.stream.status().link { return true }
            return false
        }
        let before = try fixture.records().count
        try rig.startGeoClue()
        rig.move(to: (52.6, 13.5))
        try waitUntil("fixes again", timeout: 20) {
            try fixture.records().contains { ($0["latitude"] as? Double).map { abs($0 - 52.6) < 1e-4 } ?? false }
        }
        XCTAssertGreaterThan(try fixture.records().count, before)
        XCTAssertTrue(fixture.stream.status().connected)
    }

    /// dbus restarted under the stream: the session ends with the bus, and once the bus and
    /// GeoClue are back the shared connection is made again and fixes come again.
    func testTheBusRestartedIsTakenUpAgain() throws {
        let rig = try GeoClueRig()
        let fixture = try LocationFixture(port: 1, interval: 1, tuning: tuning(rig)) { $0.source = .geoclue }
        fixture.stream.start()
        _ = try waitForRecords(fixture, atLeast: 1, rig: rig)
        try rig.bus.restartDaemon()
        try waitUntil("the stream to notice the bus is gone", timeout: 10) {
            if case .unreachable = fixture.stream.status().link { return true }
            return false
        }
        let before = try fixture.records().count
        try rig.startGeoClue()
        rig.move(to: (52.6, 13.5))
        try waitUntil("fixes again", timeout: 20) {
            try fixture.records().contains { ($0["latitude"] as? Double).map { abs($0 - 52.6) < 1e-4 } ?? false }
        }
        XCTAssertGreaterThan(try fixture.records().count, before)
        XCTAssertTrue(fixture.stream.status().connected)
    }

    /// Source `auto` on a laptop: gpsd answers with no receiver, so GeoClue; then a
    /// receiver appears at gpsd and the stream takes it up.
    func testAutoUsesGeoClueUntilGPSDHasAReceiver() throws {
        let geoClue = try GeoClueRig(position: (48.1, 11.5))
        let gpsd = try GPSDRig(startGPSD: false)
        let fixture = try LocationFixture(port: gpsd.port, interval: 1, tuning: tuning(geoClue)) { $0.source = .auto }
        fixture.stream.start()
        _ = try waitForRecords(fixture, atLeast: 1, rig: geoClue)
        XCTAssertEqual(fixture.stream.status().source, .geoclue)
        XCTAssertEqual(fixture.stream.status().choice, "gpsd at 127.0.0.1:\(gpsd.port) has no receiver")

        try gpsd.startGPSD()
        let feeder = NMEAFeeder(rig: gpsd, epochs: NMEADrive.synthetic(epochs: 40, start: Date().addingTimeInterval(-60)), period: 0.2)
        feeder.start()
        try waitUntil("a record from gpsd", timeout: 30) {
            try fixture.records().contains { $0["location_source"] as? String == "gpsd" }
        }
        XCTAssertEqual(fixture.stream.status().source, .gpsd)
        XCTAssertEqual(fixture.stream.status().choice, "a receiver appeared at gpsd 127.0.0.1:\(gpsd.port)")
        let sources = try fixture.records().compactMap { $0["location_source"] as? String }
        XCTAssertEqual(sources.firstIndex(of: "gpsd").map { Array(sources[$0...]) }?.contains("geoclue"), false,
                       "no GeoClue record after the switch: \(sources)")
        _ = feeder.waitUntilDone(timeout: 30)
    }

    /// As a user service the agent does not register as GeoClue's agent: without the
    /// desktop's agent GeoClue gives nothing and the status says why; once the desktop's
    /// agent (here the test's own, under gnome-shell's whitelisted id) is there, fixes come
    /// without a restart.
    func testAsAUserServiceTheDesktopsAgentIsNeeded() throws {
        let rig = try GeoClueRig()
        let fixture = try LocationFixture(port: 1, interval: 1, tuning: tuning(rig), serviceMode: .user) { $0.source = .geoclue }
        fixture.stream.start()
        try waitUntil("the stream to report that no desktop agent runs", timeout: 20) {
            if case .unreachable = fixture.stream.status().link { return true }
            return false
        }
        guard case .unhealthy(let reason, _) = fixture.stream.liveness() else { return XCTFail("healthy without an agent") }
        XCTAssertTrue(reason.contains("desktop's location agent"), reason)
        XCTAssertEqual(try fixture.records().count, 0)

        let desktop = try DesktopGeoClueAgent(bus: rig.bus.address)
        let records = try waitForRecords(fixture, atLeast: 1, rig: rig)
        XCTAssertEqual(records.first?["location_source"] as? String, "geoclue")
        XCTAssertEqual(fixture.log.count(.notice, containing: "GeoClue answers again"), 1)
        _ = desktop
    }
}

extension LocationStreamGeoClueTests {
    /// Privacy zones apply to GeoClue's fixes as to gpsd's.
    func testAPrivacyZoneKeepsGeoClueFixesOut() throws {
        let rig = try GeoClueRig(position: (52.5, 13.4))
        let fixture = try LocationFixture(port: 1, interval: 1, tuning: tuning(rig)) {
            $0.source = .geoclue
            $0.exclude = [PrivacyZone(latitude: 52.5, longitude: 13.4, radius: 500)]
        }
        fixture.stream.start()
        try waitUntil("fixes inside the zone to be counted", timeout: 20) {
            (fixture.stream.counters()[StreamCounter.privacySkipped] ?? 0) >= 2
        }
        XCTAssertEqual(try fixture.records().count, 0, "no fix inside the zone is written")
        rig.move(to: (52.6, 13.4))
        let records = try waitForRecords(fixture, atLeast: 1, rig: rig)
        XCTAssertEqual(try XCTUnwrap(records.first?["latitude"] as? Double), 52.6, accuracy: 1e-4)
    }
}

/// GeoClue's Wi-Fi source against a locator of the test's own (`GeoLocatorRig`), as a
/// laptop meets BeaconDB: first an IP lookup of 25 km, then a 40 m position.
final class GeoClueWiFiLocatorTests: XCTestCase {
    func testAnIPLookupIsNotWrittenAndAFinePositionIsWithItsAccuracy() throws {
        let locator = try GeoLocatorRig(answer: .position(latitude: 52.52, longitude: 13.40, accuracy: 25_000, fallback: "ipf"))
        let rig = try GeoClueRig(wifiLocator: locator.url)
        var tuning = LocationTuning()
        tuning.geoClueBus = .address(rig.bus.address)
        tuning.geoClueRetry = Backoff(base: 0.2, cap: 1)
        tuning.geoClueStartTimeout = 2
        let fixture = try LocationFixture(port: 1, interval: 1, tuning: tuning) { $0.source = .geoclue }
        fixture.stream.start()
        do {
            try waitUntil("GeoClue's IP lookup to reach the stream", timeout: 20) {
                (fixture.stream.counters()[StreamCounter.tooCoarse] ?? 0) >= 1
            }
        } catch {
            print("GeoClue's log:\n\(rig.log)\nthe locator's requests: \(locator.requests)")
            throw error
        }
        // No wpa_supplicant on the private bus: GeoClue 2.6 sends the locator an empty
        // query, a pure IP lookup.
        XCTAssertEqual(locator.requests.first, "{}", "\(locator.requests)")
        XCTAssertEqual(try fixture.records().count, 0, "no record from a 25 km lookup under max_accuracy 1000")
        XCTAssertEqual(fixture.stream.details()[StreamCounter.lastAccuracy], "25000")
        XCTAssertEqual(fixture.stream.details()[StreamCounter.lastMethod], "ip?", "GeoClue 2.6 does not say: inferred, and marked so")

        // The locator now knows the place; GeoClue asks it again when it starts anew.
        try locator.answer(.position(latitude: 52.5301, longitude: 13.4102, accuracy: 40))
        // GeoClue stamps a fix to the second: one in the same second as the last is the
        // same fix to the stream, so the next comes in a later one.
        Thread.sleep(forTimeInterval: 1.1)
        rig.stopGeoClue()
        try rig.startGeoClue()
        do {
            try waitUntil("a record from the 40 m position", timeout: 30) { try fixture.records().count >= 1 }
        } catch {
            print("GeoClue's log:\n\(rig.log)\nthe locator's requests: \(locator.requests)")
            throw error
        }
        let record = try XCTUnwrap(try fixture.records().first)
        XCTAssertEqual(try XCTUnwrap(record["latitude"] as? Double), 52.5301, accuracy: 1e-6)
        XCTAssertEqual(record["horizontal_accuracy"] as? Double, 40)
        XCTAssertEqual(record["location_source"] as? String, "geoclue")
        XCTAssertNil(record["location_method"], "GeoClue 2.6 does not say how; a 40 m fix is not guessed at")
        XCTAssertNil(fixture.stream.details()[StreamCounter.lastMethod])
    }
}
