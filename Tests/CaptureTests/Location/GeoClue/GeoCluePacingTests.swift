import AgentCore
@testable import Capture
import Foundation
import TestRigs
import XCTest

/// `geoclue_mode` against Debian's real GeoClue: per fix, the client is let go between
/// fixes (GeoClue's `InUse` falls to false, so it stops its sources) and the fixes still
/// come; `auto` takes fixes that way on battery and holds the client on mains.
final class GeoCluePacingTests: XCTestCase {
    private func inUse(_ rig: GeoClueRig) throws -> Bool {
        let output = try rig.bus.busctl(["get-property", "org.freedesktop.GeoClue2", "/org/freedesktop/GeoClue2/Manager",
                                         "org.freedesktop.GeoClue2.Manager", "InUse"])
        return output.trimmingCharacters(in: .whitespacesAndNewlines) == "b true"
    }

    private func tuning(_ rig: GeoClueRig, power: String? = nil) -> LocationTuning {
        var tuning = LocationTuning()
        tuning.geoClueBus = .address(rig.bus.address)
        tuning.geoClueRetry = Backoff(base: 0.2, cap: 1)
        tuning.geoClueStartTimeout = 2
        tuning.geoClueFixInterval = 2
        tuning.geoClueFixTimeout = 10
        tuning.powerSupplyPath = power
        tuning.powerCheckInterval = 0.5
        return tuning
    }

    func testPerFixLetsGeoClueGoBetweenFixes() throws {
        let rig = try GeoClueRig(position: (52.5, 13.4))
        let fixture = try LocationFixture(port: 1, interval: 1, tuning: tuning(rig)) {
            $0.source = .geoclue
            $0.geoclueMode = .perFix
        }
        fixture.stream.start()
        try waitUntil("a first record", timeout: 20) { try fixture.records().count >= 1 }
        try waitUntil("GeoClue without a client between fixes", timeout: 10) { try !inUse(rig) }
        // Standing still: the next clients' fixes are the same place, and are held back as a
        // held client would get none.
        try waitUntil("two more fixes taken", timeout: 20) {
            fixture.log.count(.debug, containing: "the same place as the last: not written again") >= 2
        }
        XCTAssertEqual(try fixture.records().count, 1, "no record of the same place again")
        rig.move(to: (52.51, 13.4))
        try waitUntil("the next fix, taken by a new client", timeout: 20) {
            try fixture.records().contains { ($0["latitude"] as? Double).map { abs($0 - 52.51) < 1e-4 } ?? false }
        }
        XCTAssertEqual(fixture.log.count(.info, containing: "a fix every 2 s, GeoClue let go between them"), 1)
    }

    func testAutoTakesFixesOnBatteryAndHoldsOnMains() throws {
        let rig = try GeoClueRig(position: (52.5, 13.4))
        let dir = try TemporaryDirectory("geoclue-power")
        let power = FakePowerSupply(path: dir.path)
        try power.laptop(onMains: false, battery: 80)
        let fixture = try LocationFixture(port: 1, interval: 1, tuning: tuning(rig, power: dir.path)) { $0.source = .geoclue }
        XCTAssertEqual(LocationConfig().geoclueMode, .auto, "the default")
        fixture.stream.start()
        try waitUntil("a first record on battery", timeout: 20) { try fixture.records().count >= 1 }
        try waitUntil("GeoClue let go on battery", timeout: 10) { try !inUse(rig) }

        try power.laptop(onMains: true, battery: 80)
        try waitUntil("the client held on mains", timeout: 15) {
            fixture.log.count(.info, containing: "a client held all along (geoclue_mode auto, on mains)") == 1
        }
        // Held: GeoClue keeps the client, checked twice over a fix interval's span.
        try waitUntil("GeoClue in use", timeout: 10) { try inUse(rig) }
        Thread.sleep(forTimeInterval: 3)
        XCTAssertTrue(try inUse(rig), "held on mains, not let go between fixes")
    }
}
