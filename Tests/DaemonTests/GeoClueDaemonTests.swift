import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// `ariata-agent run` on a laptop: no gpsd, Debian's real GeoClue on a private system bus
/// (fed by the test's NMEA socket), the default `source = "auto"`. Location records reach
/// the receiver with their source, and `status` says where fixes come from and why.
final class GeoClueDaemonTests: XCTestCase {
    private func deliversGeoClueFixes(mode: ServiceMode, beforeStart: (GeoClueRig) throws -> Void = { _ in }) throws {
        let geoClue = try GeoClueRig(position: (47.37, 8.54))
        try beforeStart(geoClue)
        let rig = try DaemonRig(gpsdRunning: false)
        try rig.startAgent(environment: geoClue.bus.environment.merging([ServiceMode.environmentVariable: mode.rawValue]) { $1 })
        do {
            try waitUntil("two location records at the receiver", timeout: 45) { try rig.receiver.stats().stored(.location) >= 2 }
        } catch {
            print("agent log:\n\(rig.agentLog)\nGeoClue log:\n\(geoClue.log)")
            throw error
        }
        let database = try rig.openDatabase()
        let payloads = try database.recordQueue.records(stream: .location).compactMap {
            try JSONSerialization.jsonObject(with: $0.payload) as? [String: Any]
        }
        XCTAssertFalse(payloads.isEmpty)
        for payload in payloads {
            XCTAssertEqual(payload["location_source"] as? String, "geoclue")
            XCTAssertEqual(try XCTUnwrap(payload["latitude"] as? Double), 47.37, accuracy: 1e-4)
        }
        // Both servers read them: latitude, longitude and timestamp are all they need.
        let readable = try rig.receiver.readable()
        for generation in ["ariata", "virtues"] {
            XCTAssertEqual(readable[generation]?["location"]?.read, readable[generation]?["location"]?.received, generation)
        }

        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        try waitUntil("status to show the location source", timeout: 20) {
            let report = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
            return report.streams.first { $0.name == "location" }?.source == "geoclue"
        }
        let report = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
        let location = try XCTUnwrap(report.streams.first { $0.name == "location" })
        XCTAssertEqual(location.sourceReason, "gpsd at 127.0.0.1:\(rig.gps.port) has no receiver")
        XCTAssertEqual(location.liveness, "healthy", location.reason ?? "")
        let text = try cli.run(["status"], environment: ["NO_COLOR": "1"]).stdout
        XCTAssertTrue(text.contains("location: fixes from GeoClue (gpsd at 127.0.0.1:\(rig.gps.port) has no receiver)"), text)
        XCTAssertEqual(rig.stopAgent(), 0)
    }

    /// As the system service: its own GeoClue agent.
    func testAsTheSystemServiceItIsItsOwnGeoClueAgent() throws {
        try deliversGeoClueFixes(mode: .system)
    }

    /// As a user service: the desktop's agent (the test's, under gnome-shell's id) is there.
    func testAsAUserServiceTheDesktopsAgentAuthorizesIt() throws {
        var desktop: DesktopGeoClueAgent?
        try deliversGeoClueFixes(mode: .user) { geoClue in
            desktop = try DesktopGeoClueAgent(bus: geoClue.bus.address)
        }
        XCTAssertNotNil(desktop)
    }

    /// A laptop whose GeoClue knows only its IP address (its locator answers 25 km): no
    /// position is recorded, and `status` says what location is worth and why.
    func testOnlyAnIPLookupIsNotRecordedAndStatusSaysSo() throws {
        let locator = try GeoLocatorRig(answer: .position(latitude: 47.37, longitude: 8.54, accuracy: 25_000, fallback: "ipf"))
        let geoClue = try GeoClueRig(wifiLocator: locator.url)
        let rig = try DaemonRig(gpsdRunning: false)
        try rig.startAgent(environment: geoClue.bus.environment.merging([ServiceMode.environmentVariable: "system"]) { $1 })
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        var text = ""
        do {
            try waitUntil("status to say what location is worth", timeout: 45) {
                text = try cli.run(["status"], environment: ["NO_COLOR": "1"]).stdout
                return text.contains("only what looks like an IP-address lookup")
            }
        } catch {
            print("status:\n\(text)\nagent log:\n\(rig.agentLog)\nGeoClue log:\n\(geoClue.log)")
            throw error
        }
        XCTAssertTrue(text.contains("location: only what looks like an IP-address lookup (GeoClue does not say), 25 km (GeoClue): the Wi-Fi locator knows none of the access points here"), text)
        let report = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
        let location = try XCTUnwrap(report.streams.first { $0.name == "location" })
        XCTAssertEqual(location.lastMethod, "ip")
        XCTAssertEqual(location.lastMethodInferred, true)
        XCTAssertEqual(location.lastAccuracy, 25_000)
        XCTAssertGreaterThanOrEqual(location.tooCoarse ?? 0, 1)
        XCTAssertEqual(try rig.openDatabase().recordQueue.records(stream: .location).count, 0, "no position recorded")
        XCTAssertEqual(rig.stopAgent(), 0)
    }
}

