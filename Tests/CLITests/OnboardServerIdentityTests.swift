import AgentCore
import Foundation
import Setup
import TestRigs
import XCTest

/// `onboard` asks the server which generation it is (`GET /health`) before anything else,
/// names it, offers only what that generation supports, proposes the chunk length that fits
/// it, and says at its end when the server has no stream switched on for the device yet:
/// the built binary against the reference receiver in each generation.
final class OnboardServerIdentityTests: XCTestCase {
    private func setUp(_ name: String, generation: String, microphone: String = "device = \"null\"") throws
        -> (TemporaryDirectory, ReceiverRig, AgentCLI) {
        let dir = try TemporaryDirectory(name)
        let receiver = try ReceiverRig(logDirectory: dir.path, token: "paired-token", arguments: ["--generation", generation])
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: """
            [location]
            enabled = false
            [microphone]
            \(microphone)
            """)
        return (dir, receiver, cli)
    }

    /// Ariata: named with its version; pairing by code; 30 s chunks; and right after pairing
    /// the server has switched nothing on, which onboarding says at its end.
    func testAriataIsNamedPairsByCodeAndSaysNothingIsSwitchedOnYet() throws {
        let (dir, receiver, cli) = try setUp("identity-ariata", generation: "ariata")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        try receiver.addPairingCode("A1B2C3")
        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--code", "A1B2C3", "--yes"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        let out = result.stdout
        XCTAssertTrue(out.contains("server: Ariata 0.1.0: pairs devices with the code its web UI shows"), out)
        XCTAssertTrue(out.contains("audio in 30 s chunks: as Ariata's own app sends them"), out)
        XCTAssertTrue(out.contains("the server has no stream switched on for this device yet"), out)
        XCTAssertTrue(out.contains("turn them on in its web UI; capture starts within a minute of that"), out)
        let written = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertEqual(written.microphone.chunkSeconds, 30)
        XCTAssertTrue(try String(contentsOfFile: cli.configPath, encoding: .utf8).contains("chunk_seconds = 30"), "written")

        // Switched on in the web UI: onboarding again says so instead.
        try receiver.setVerify(["healthkit": ["is_enabled": true], "microphone": ["is_enabled": true]])
        let again = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--yes"])
        XCTAssertEqual(again.status, 0, again.stdout + again.stderr)
        XCTAssertTrue(again.stdout.contains("not captured until switched on there: location"), again.stdout)
        XCTAssertFalse(again.stdout.contains("no stream switched on"), again.stdout)
    }

    /// `--link` against Ariata, which has no linking route: refused at once with the code
    /// flow, instead of waiting out its 600 s; nothing written.
    func testLinkIsRefusedOnAriataWithAPointerToTheCode() throws {
        let (dir, receiver, cli) = try setUp("identity-ariata-link", generation: "ariata")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        let before = try Data(contentsOf: URL(fileURLWithPath: cli.configPath))
        let started = Date()
        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--link", "--yes"])
        XCTAssertEqual(result.status, 64, result.stdout + result.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 30, "no waiting for a link that cannot come")
        let said = result.stdout + result.stderr
        XCTAssertTrue(said.contains("this server is Ariata 0.1.0, which does not link devices by their id"), said)
        XCTAssertTrue(said.contains("--code CODE"), said)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: cli.configPath)), before, "nothing written")
        XCTAssertEqual(try receiver.stats().requests, 0, "not a single ingest request")
    }

    /// Virtues: named by version, commit and build; linking offered; 300 s chunks with the
    /// reason; an explicit chunk_seconds wins.
    func testVirtuesIsNamedByItsBuildLinksByIDAndGetsLongChunks() throws {
        let (dir, receiver, cli) = try setUp("identity-virtues", generation: "virtues")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        let id = UUID().uuidString.lowercased()
        try "[server]\ndevice_id = \"\(id)\"\n".appendLine(to: cli.configPath)
        try receiver.link(deviceID: id)
        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--link", "--yes"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        let out = result.stdout
        XCTAssertTrue(out.contains("server: Virtues 0.4.2, commit d561967, built 2026-03-10T12:00:00Z: links devices by their id"), out)
        XCTAssertTrue(out.contains("audio in 300 s chunks: Virtues transcribes each chunk with one paid speech-model call"), out)
        XCTAssertFalse(out.contains("server switches"), "Virtues has no switches to report: \(out)")
        XCTAssertEqual(try AgentConfig.load(path: cli.configPath, environment: [:]).microphone.chunkSeconds, 300)

        // A length the person set stays, and onboarding says what would fit.
        var text = try String(contentsOfFile: cli.configPath, encoding: .utf8)
        text = text.replacingOccurrences(of: "chunk_seconds = 300", with: "chunk_seconds = 60")
        try text.write(toFile: cli.configPath, atomically: true, encoding: .utf8)
        let again = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--link", "--yes"])
        XCTAssertEqual(again.status, 0, again.stdout + again.stderr)
        XCTAssertTrue(again.stdout.contains("audio in 60 s chunks, as the configuration sets"), again.stdout)
        XCTAssertEqual(try AgentConfig.load(path: cli.configPath, environment: [:]).microphone.chunkSeconds, 60)
    }

    /// A Virtues build with the login wall: its 401 is named as that build's known problem.
    func testTheLoginWallIsNamedWithTheBuildItCameFrom() throws {
        let (dir, receiver, cli) = try setUp("identity-wall", generation: "virtues")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        try receiver.setLoginWall(true)
        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token", "any", "--yes"])
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("this is the known problem of Virtues 0.4.2, commit d561967, built 2026-03-10T12:00:00Z, "
                                             + "a build of Virtues' 2026-02 release or later"), result.stdout)
    }
}

private extension String {
    func appendLine(to path: String) throws {
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(("\n" + self).utf8))
        try handle.close()
    }
}
