import AgentCore
@testable import Capture
import Foundation
import Logging
import Platform
import TestRigs
import XCTest

/// `[location] source` to a kind, and `auto`'s rule, against a real gpsd: one with a
/// receiver is taken, one without (or none at all) leaves the stream on GeoClue, watching
/// gpsd for a receiver.
final class LocationSourceChooserTests: XCTestCase {
    private func choose(_ source: LocationConfig.Source, port: Int) -> (source: any LocationSource, reason: String?) {
        var config = LocationConfig()
        config.source = source
        config.gpsdHost = "127.0.0.1"
        config.gpsdPort = port
        var tuning = LocationTuning()
        tuning.gpsdProbeTimeout = 2
        return LocationSourceChooser(config: config, tuning: tuning, clock: SystemClock(), logger: Logger(label: "test"),
                                     timeEvidence: TimeEvidence(), serviceMode: .system).choose()
    }

    func testANamedSourceIsTakenWithoutAsking() throws {
        let port = try FreePort.find()
        let gpsd = choose(.gpsd, port: port)
        XCTAssertEqual(gpsd.source.kind, .gpsd)
        XCTAssertEqual(gpsd.source.address, "127.0.0.1:\(port)")
        XCTAssertNil(gpsd.reason)
        let geoClue = choose(.geoclue, port: port)
        XCTAssertEqual(geoClue.source.kind, .geoclue)
        XCTAssertNil(geoClue.reason)
    }

    func testAutoTakesGPSDWithAReceiver() throws {
        let rig = try GPSDRig()
        let chosen = choose(.auto, port: rig.port)
        XCTAssertEqual(chosen.source.kind, .gpsd)
        XCTAssertEqual(chosen.reason, "gpsd at 127.0.0.1:\(rig.port) has a receiver")
    }

    func testAutoWithoutAReceiverIsGeoClueWatchingGPSD() throws {
        let port = try FreePort.find()
        let chosen = choose(.auto, port: port)
        XCTAssertEqual(chosen.source.kind, .geoclue)
        XCTAssertEqual(chosen.reason, "gpsd at 127.0.0.1:\(port) has no receiver")
        XCTAssertFalse(LocationSourceChooser.autoTakesGPSD(receivers: 0), "gpsd that answers with no receiver")
        XCTAssertFalse(LocationSourceChooser.autoTakesGPSD(receivers: nil), "no gpsd")
        XCTAssertTrue(LocationSourceChooser.autoTakesGPSD(receivers: 1))
    }
}
