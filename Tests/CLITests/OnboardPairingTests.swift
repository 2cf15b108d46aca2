import AgentCore
import Foundation
import TestRigs
import XCTest

/// `ariata-agent onboard --code`: the pairing the Ariata server's web UI offers, against
/// the reference receiver's pairing endpoint (one-time codes with an expiry); and what
/// onboarding keeps of the file it edits.
final class OnboardPairingTests: XCTestCase {
    static let token = "paired-token-93ad"

    private func setUp(_ name: String, streams: [String]? = nil) throws -> (TemporaryDirectory, ReceiverRig, AgentCLI) {
        let dir = try TemporaryDirectory(name)
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token)
        if let streams { try receiver.configure(streams: streams) }
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: """
            [location]
            gpsd_host = "127.0.0.1"
            gpsd_port = \(try FreePort.find())
            [microphone]
            device = "null"
            """)
        return (dir, receiver, cli)
    }

    func testAValidCodeGivesAWorkingTokenAndTellsTheServerWhatDeviceThisIs() throws {
        let (dir, receiver, cli) = try setUp("pair-ok")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        try receiver.addPairingCode("A1B2C3")

        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--code", "A1B2C3", "--device-name", "kitchen-pi", "--yes"])

        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("paired: the server gave this device its token"), result.stdout)
        XCTAssertTrue(result.stdout.contains("verified: the server took the device token"), result.stdout)
        XCTAssertFalse((result.stdout + result.stderr).contains(Self.token), "the token is never printed")
        let written = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertEqual(written.server.token.value, Self.token)
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: cli.configPath)[.posixPermissions] as? NSNumber)
        XCTAssertEqual(mode.intValue & 0o777, 0o600)

        let device = try XCTUnwrap(try receiver.pairings().first)
        XCTAssertEqual(device["device_id"], written.server.deviceID, "the same id the device then sends as device_id")
        XCTAssertEqual(device["device_name"], "kitchen-pi")
        XCTAssertEqual(device["app_version"], "ariata-agent \(AgentVersion.string)")
        XCTAssertFalse(device["device_model"]?.isEmpty ?? true)
        XCTAssertFalse(device["os_version"]?.isEmpty ?? true)
        XCTAssertFalse(result.stdout.contains("does not list"), "all three streams are there: no warning")
    }

    /// An expired, a used and a wrong code each write nothing and say why.
    func testRefusedCodesWriteNothingAndSayWhy() throws {
        let (dir, receiver, cli) = try setUp("pair-refused")
        defer { receiver.stop() }
        try receiver.addPairingCode("OLD111", ttl: -1)
        try receiver.addPairingCode("ONCE22")
        let before = try Data(contentsOf: URL(fileURLWithPath: cli.configPath))

        // Used once (in another directory's config), it does not work again.
        let other = AgentCLI(directory: dir.path, configPath: dir.file("other.toml"))
        XCTAssertEqual(try other.run(["onboard", "--endpoint", receiver.endpoint, "--code", "ONCE22", "--yes"]).status, 0)

        let cases: [(code: String, says: String)] = [
            ("OLD111", "Pairing code has expired"),
            ("ONCE22", "Invalid or expired pairing code"),
            ("WRONG9", "Invalid or expired pairing code"),
        ]
        for (code, says) in cases {
            let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--code", code, "--yes"])
            XCTAssertEqual(result.status, 1, "\(code): \(result.stdout) \(result.stderr)")
            XCTAssertTrue((result.stdout + result.stderr).contains(says), "\(code): \(result.stdout) \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("nothing was written"), result.stderr)
            XCTAssertTrue(result.stdout.contains("ask the server's web UI for a new one"), result.stdout)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: cli.configPath)), before, "\(code): the file is untouched")
        }
        XCTAssertEqual(try receiver.stats().requests, 1, "only the successful onboarding reached the ingest endpoint")
    }

    func testAServerWithoutAStreamMakesOnboardingWarnAndNameIt() throws {
        let (dir, receiver, cli) = try setUp("pair-streams", streams: ["location", "microphone"])
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        try receiver.addPairingCode("B2C3D4")

        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--code", "B2C3D4", "--yes"])

        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("warn  streams: the server does not list healthkit among this device's streams (it lists location, microphone)"),
                      result.stdout)
    }

    /// Onboarding the installed example: every comment line and every key it does not set
    /// stays as it was; a scripted run with no gpsd keeps location enabled.
    func testOnboardKeepsTheCommentedExampleAndChangesOnlyItsKeys() throws {
        let dir = try TemporaryDirectory("pair-example")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token)
        defer { receiver.stop() }
        try receiver.addPairingCode("C3D4E5")
        let example = try String(contentsOfFile: Repository.path("etc/agent.toml"), encoding: .utf8)
        // The user's own touches: a comment of theirs, a key they changed, the test's paths.
        let edited = example
            .replacingOccurrences(of: "database = \"/var/lib/ariata/agent.sqlite\"",
                                  with: "database = \"\(dir.file("agent.sqlite"))\"  # on the USB stick")
            .replacingOccurrences(of: "gpsd_port = 2947", with: "gpsd_port = \(try FreePort.find())\n# my note: the GPS hat")
            .replacingOccurrences(of: "device = \"default\"", with: "device = \"null\"")
            .replacingOccurrences(of: "bitrate = 16000", with: "bitrate = 24000")
        let path = dir.file("agent.toml")
        try edited.write(toFile: path, atomically: true, encoding: .utf8)
        let cli = AgentCLI(directory: dir.path, configPath: path)

        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--code", "C3D4E5", "--device-name", "desk", "--yes"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)

        let after = try String(contentsOfFile: path, encoding: .utf8)
        let beforeLines = edited.components(separatedBy: "\n")
        let afterLines = after.components(separatedBy: "\n")
        for line in beforeLines where line.trimmingCharacters(in: .whitespaces).hasPrefix("#") {
            XCTAssertTrue(afterLines.contains(line), "comment kept: \(line)")
        }
        // Only the lines of the keys onboarding sets differ.
        let changed = Set(beforeLines).symmetricDifference(Set(afterLines))
        let keys = Set(changed.compactMap { line -> String? in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#"), let eq = trimmed.firstIndex(of: "=") else { return nil }
            return trimmed[..<eq].trimmingCharacters(in: .whitespaces)
        })
        XCTAssertEqual(keys, ["endpoint", "token", "device_id", "device_name", "chunk_seconds"], "\(changed)")
        let config = try AgentConfig.load(path: path, environment: [:])
        XCTAssertEqual(config.server.endpoint, receiver.endpoint)
        XCTAssertEqual(config.server.token.value, Self.token)
        XCTAssertEqual(config.server.deviceName, "desk")
        XCTAssertEqual(config.microphone.bitrate, 24_000, "the user's value")
        XCTAssertTrue(config.location.enabled, "no gpsd here, and location stays on")
        XCTAssertTrue(after.contains("database = \"\(dir.file("agent.sqlite"))\"  # on the USB stick"))
    }
}
