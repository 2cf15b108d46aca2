import AgentCore
import Foundation
@testable import Setup
import TestRigs
import XCTest

/// `onboard` on a laptop without a GPS receiver, as the system service: location from
/// GeoClue (Debian's real one on a private bus), which must let the agent be its own
/// agent. On GeoClue 2.7 onboarding writes the whitelist drop-in; on 2.6 it names the line
/// to change in geoclue.conf. GeoClue's files are a copy of Debian's in a directory of the
/// test's (`ARIATA_GEOCLUE_ROOT`), never the machine's.
final class OnboardGeoClueTests: XCTestCase {
    private func onboard(version: String) throws -> (result: AgentCLI.Result, root: String, keep: [AnyObject]) {
        let dir = try TemporaryDirectory("onboard-geoclue")
        let geoClue = try GeoClueRig()
        let receiver = try ReceiverRig(logDirectory: dir.path, token: "laptop-token")
        let root = dir.file("geoclue")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: "/etc/geoclue/geoclue.conf", toPath: "\(root)/geoclue.conf")
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: """
            [location]
            gpsd_host = "127.0.0.1"
            gpsd_port = \(try FreePort.find())
            [microphone]
            device = "null"
            [health]
            enabled = false
            """)
        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token", "laptop-token", "--yes", "--system-service"],
                                 environment: geoClue.bus.environment.merging(["ARIATA_GEOCLUE_ROOT": root,
                                                                                "ARIATA_GEOCLUE_VERSION": version]) { $1 })
        return (result, root, [dir, geoClue, receiver])
    }

    func testOnGeoClue27TheWhitelistDropInIsWrittenAndTheCheckPasses() throws {
        let (result, root, keep) = try onboard(version: "2.7.2")
        defer { withExtendedLifetime(keep) {} }
        let out = result.stdout
        XCTAssertEqual(result.status, 0, out + result.stderr)
        XCTAssertTrue(out.contains("wrote \(root)/conf.d/90-ariata-agent.conf"), out)
        XCTAssertTrue(out.contains("no gpsd at 127.0.0.1"), out)
        XCTAssertTrue(out.contains("fixes from GeoClue"), out)
        XCTAssertTrue(out.contains("a fix in "), "onboarding takes a real fix: \(out)")
        let dropIn = try String(contentsOfFile: "\(root)/conf.d/90-ariata-agent.conf", encoding: .utf8)
        // Debian's list restated, with the agent at its end: GeoClue takes the whole key.
        XCTAssertTrue(dropIn.contains("whitelist=geoclue-demo-agent;gnome-shell;io.elementary.desktop.agent-geoclue2;sm.puri.Phosh;lipstick;ariata-agent"), dropIn)
        XCTAssertTrue(GeoClueAgentWhitelist(root: root, version: "2.7.2").allowsTheAgent)
    }

    func testOnGeoClue26TheLineToChangeIsNamedAndNothingIsWritten() throws {
        let (result, root, keep) = try onboard(version: "2.6.0")
        defer { withExtendedLifetime(keep) {} }
        let out = result.stdout
        XCTAssertTrue(out.contains("does not let ariata-agent act as its own agent"), out)
        XCTAssertTrue(out.contains("in \(root)/geoclue.conf, section [agent], set whitelist=geoclue-demo-agent;gnome-shell;io.elementary.desktop.agent-geoclue2;sm.puri.Phosh;lipstick;ariata-agent"), out)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(root)/conf.d"), "another package's conffile is not written")
        XCTAssertEqual(try String(contentsOfFile: "\(root)/geoclue.conf", encoding: .utf8),
                       try String(contentsOfFile: "/etc/geoclue/geoclue.conf", encoding: .utf8))
    }
}

/// The whitelist as GeoClue reads it: the main file, replaced by drop-ins on 2.7.
final class GeoClueAgentWhitelistTests: XCTestCase {
    func testADropInReplacesTheMainFilesListAndIsRestatedWhole() throws {
        let dir = try TemporaryDirectory("geoclue-whitelist")
        try "[agent]\nwhitelist=gnome-shell;lipstick\n[wifi]\nenable=true\n".write(toFile: dir.file("geoclue.conf"), atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: dir.file("conf.d"), withIntermediateDirectories: true)
        try "[agent]\nwhitelist=phosh\n".write(toFile: dir.file("conf.d/50-phosh.conf"), atomically: true, encoding: .utf8)

        let old = GeoClueAgentWhitelist(root: dir.path, version: "2.6.0")
        XCTAssertEqual(old.currentList(), ["gnome-shell", "lipstick"], "2.6 reads no drop-ins")
        XCTAssertNil(try old.writeDropIn())

        let new = GeoClueAgentWhitelist(root: dir.path, version: "2.7.2")
        XCTAssertEqual(new.currentList(), ["phosh"])
        XCTAssertFalse(new.allowsTheAgent)
        XCTAssertEqual(try new.writeDropIn(), dir.file("conf.d/90-ariata-agent.conf"))
        XCTAssertEqual(new.currentList(), ["phosh", "ariata-agent"])
        XCTAssertNil(try new.writeDropIn(), "once listed, nothing more to write")
        let attributes = try FileManager.default.attributesOfItem(atPath: dir.file("conf.d/90-ariata-agent.conf"))
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o644)
    }
}

/// What `doctor` reads of GeoClue's files for the causes of a missing or coarse fix.
final class GeoClueDiagnosisTests: XCTestCase {
    func testTheRetiredLocatorIsNamedWithTheFixForEachVersion() throws {
        let dir = try TemporaryDirectory("geoclue-diagnosis")
        try "[wifi]\nenable=true\nurl=https://location.services.mozilla.com/v1/geolocate?key=geoclue\n"
            .write(toFile: dir.file("geoclue.conf"), atomically: true, encoding: .utf8)
        let old = GeoClueDiagnosis(files: GeoClueAgentWhitelist(root: dir.path, version: "2.6.0"), hasWPASupplicant: true)
        XCTAssertEqual(old.causes().map(\.fix), ["in \(dir.path)/geoclue.conf, section [wifi], set url=https://api.beacondb.net/v1/geolocate and restart geoclue (sudo systemctl restart geoclue)"])
        let new = GeoClueDiagnosis(files: GeoClueAgentWhitelist(root: dir.path, version: "2.7.2"), hasWPASupplicant: true)
        XCTAssertEqual(new.causes().first?.fix, "write \(dir.path)/conf.d/90-beacondb.conf with the two lines `[wifi]` and `url=https://api.beacondb.net/v1/geolocate`, then sudo systemctl restart geoclue")

        // A 2.7 drop-in that sets BeaconDB ends it; 2.6 does not read drop-ins.
        try FileManager.default.createDirectory(atPath: dir.file("conf.d"), withIntermediateDirectories: true)
        try "[wifi]\nurl=https://api.beacondb.net/v1/geolocate\n".write(toFile: dir.file("conf.d/90-beacondb.conf"), atomically: true, encoding: .utf8)
        XCTAssertEqual(new.causes(), [])
        XCTAssertEqual(old.causes().count, 1)

        // Wi-Fi off and no wpa_supplicant: both named, the source first.
        try "[wifi]\nenable=false\n".write(toFile: dir.file("geoclue.conf"), atomically: true, encoding: .utf8)
        let off = GeoClueDiagnosis(files: GeoClueAgentWhitelist(root: dir.path, version: "2.6.0"), executable: "/nonexistent",
                                   hasWPASupplicant: false)
        XCTAssertEqual(off.causes().map(\.detail), ["GeoClue's Wi-Fi source is off",
                                                    "no wpa_supplicant on the system bus (iwd, or no Wi-Fi): GeoClue cannot scan Wi-Fi and can only look up the IP address"])
    }

    /// Debian 12's GeoClue after its update has BeaconDB built in.
    func testTheBuiltInLocatorIsReadFromGeoClue() throws {
        guard FileManager.default.fileExists(atPath: "/usr/libexec/geoclue") else { throw XCTSkip("GeoClue is not installed") }
        let url = try XCTUnwrap(GeoClueDiagnosis.builtInURL("/usr/libexec/geoclue"))
        XCTAssertTrue(url.hasPrefix("https://api.beacondb.net/v1/geolocate") || url.hasPrefix("https://location.services.mozilla.com/"), url)
        XCTAssertNil(GeoClueDiagnosis.builtInURL("/nonexistent"))
    }
}

