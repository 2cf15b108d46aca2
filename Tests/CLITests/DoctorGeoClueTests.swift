import AgentCore
import Foundation
import TestRigs
import XCTest

/// `doctor` on a laptop located by GeoClue: Debian's real GeoClue on a private bus, its
/// Wi-Fi source asking a locator of the test's own. It takes a real fix and reports its
/// accuracy, or fails with the cause and the line to change. GeoClue's files for the
/// diagnosis are a copy in a directory of the test's (`ARIATA_GEOCLUE_ROOT`).
final class DoctorGeoClueTests: XCTestCase {
    private func doctor(_ answer: GeoLocatorRig.Answer, urlInFiles: String? = nil) throws -> (AgentCLI.Result, GeoLocatorRig, [AnyObject]) {
        let dir = try TemporaryDirectory("doctor-geoclue")
        let locator = try GeoLocatorRig(answer: answer)
        let geoClue = try GeoClueRig(wifiLocator: locator.url)
        let root = dir.file("geoclue")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try GeoClueRig.configuration(agentWhitelist: ["gnome-shell", "ariata-agent"], wifiLocator: urlInFiles ?? locator.url)
            .write(toFile: "\(root)/geoclue.conf", atomically: true, encoding: .utf8)
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: """
            [location]
            source = "geoclue"
            [microphone]
            enabled = false
            [health]
            enabled = false
            """)
        let result = try cli.run(["doctor"], environment: geoClue.bus.environment.merging([
            "ARIATA_GEOCLUE_ROOT": root, "ARIATA_GEOCLUE_VERSION": "2.6.0", "ARIATA_GEOCLUE_FIX_TIMEOUT": "4",
            "ARIATA_SERVICE_MODE": "system",
        ]) { $1 })
        return (result, locator, [dir, geoClue])
    }

    /// The locator knows nothing (404): no fix; the cause found is that GeoClue cannot scan
    /// Wi-Fi (no wpa_supplicant on the bus), named with what to change.
    func testALocatorThatAnswersNothingFailsWithTheCause() throws {
        let (result, locator, keep) = try doctor(.notFound)
        defer { withExtendedLifetime(keep) {} }
        let out = result.stdout
        XCTAssertEqual(result.status, 1, out + result.stderr)
        XCTAssertFalse(locator.requests.isEmpty, "GeoClue asked the locator")
        XCTAssertTrue(out.contains("FAIL  GeoClue"), out)
        XCTAssertTrue(out.contains("no fix from GeoClue in 4 s: no wpa_supplicant on the system bus"), out)
        XCTAssertTrue(out.contains("wifi.backend=iwd"), out)
    }

    /// GeoClue's files still name Mozilla's retired service: that cause comes first, with
    /// the `[wifi] url` line of GeoClue 2.6.
    func testMozillasRetiredLocatorIsNamedWithTheLineToChange() throws {
        let (result, _, keep) = try doctor(.notFound, urlInFiles: "https://location.services.mozilla.com/v1/geolocate?key=geoclue")
        defer { withExtendedLifetime(keep) {} }
        let out = result.stdout
        XCTAssertTrue(out.contains("GeoClue's Wi-Fi locator is still Mozilla's retired service"), out)
        XCTAssertTrue(out.contains("section [wifi], set url=https://api.beacondb.net/v1/geolocate"), out)
    }

    /// A 25 km answer: a fix, but only an IP lookup over max_accuracy: it fails and says so.
    func testAnIPLookupFailsAsOverMaxAccuracy() throws {
        let (result, _, keep) = try doctor(.position(latitude: 52.52, longitude: 13.40, accuracy: 25_000, fallback: "ipf"))
        defer { withExtendedLifetime(keep) {} }
        let out = result.stdout
        XCTAssertEqual(result.status, 1, out + result.stderr)
        XCTAssertTrue(out.contains("only an IP-address lookup, 25 km (inferred from its accuracy: GeoClue does not say), over max_accuracy 1000 m"), out)
    }

    /// A 40 m answer passes with its accuracy.
    func testAFinePositionPassesWithItsAccuracy() throws {
        let (result, _, keep) = try doctor(.position(latitude: 52.52, longitude: 13.40, accuracy: 40))
        defer { withExtendedLifetime(keep) {} }
        let out = result.stdout
        XCTAssertTrue(out.contains("accuracy 40 m, GeoClue does not say how it was made"), out)
        XCTAssertFalse(out.contains("FAIL  GeoClue"), out)
    }

    /// As a user service on a desktop without a GeoClue agent: GeoClue answers no client;
    /// the check names GeoClue's demo agent.
    func testAUserServiceWithoutADesktopAgentIsToldOfTheDemoAgent() throws {
        let dir = try TemporaryDirectory("doctor-geoclue-user")
        let geoClue = try GeoClueRig()
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: """
            [location]
            source = "geoclue"
            [microphone]
            enabled = false
            [health]
            enabled = false
            """)
        let result = try cli.run(["doctor"], environment: geoClue.bus.environment.merging([
            "ARIATA_GEOCLUE_FIX_TIMEOUT": "3", "ARIATA_SERVICE_MODE": "user",
        ]) { $1 })
        let out = result.stdout
        XCTAssertEqual(result.status, 1, out + result.stderr)
        XCTAssertTrue(out.contains("GeoClue waits for the desktop's location agent, and none runs for this user"), out)
        XCTAssertTrue(out.contains("/usr/libexec/geoclue-2.0/demos/agent"), out)
    }
}
