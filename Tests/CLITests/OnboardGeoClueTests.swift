import AgentCore
import Foundation
import Setup
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
