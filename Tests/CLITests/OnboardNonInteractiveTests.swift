import AgentCore
import Foundation
import TestRigs
import XCTest

/// `ariata-agent onboard --yes` as a scripted install runs it: the built binary against
/// the reference receiver on 127.0.0.1, stdin not a terminal.
final class OnboardNonInteractiveTests: XCTestCase {
    static let token = "onboard-token-5f1c"

    /// A config holding only what keeps the test inside its directory and the device
    /// checks deterministic: the database in the temp dir, gpsd on a port where nothing
    /// listens (its check fails), the microphone on ALSA's "null" device (its check passes).
    func seedConfig(_ dir: TemporaryDirectory) throws -> AgentCLI {
        try AgentCLI.writeConfig(in: dir.path, extra: """
            [location]
            source = "gpsd"
            gpsd_host = "127.0.0.1"
            gpsd_port = \(try FreePort.find())
            [microphone]
            device = "null"
            """)
    }

    func testOnboardingWritesAPrivateConfigThatReadsBackAndKeepsTheDeviceID() throws {
        let dir = try TemporaryDirectory("onboard-ok")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token)
        defer { receiver.stop() }
        let cli = try seedConfig(dir)
        let tokenFile = dir.file("token")
        try "\(Self.token)\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)

        let first = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token-file", tokenFile,
                                 "--device-name", "test-box", "--yes"])
        XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
        XCTAssertTrue(first.stdout.contains("verified: the server took the device token (HTTP 200"), first.stdout)
        // gpsd's check failed: --yes keeps location enabled (gpsd may start later; the
        // daemon retries) and says so, with the fix command.
        XCTAssertTrue(first.stdout.contains("FAIL  gpsd at 127.0.0.1:"), first.stdout)
        XCTAssertTrue(first.stdout.contains("fix: sudo apt install gpsd"), first.stdout)
        XCTAssertTrue(first.stdout.contains("location stays enabled: it retries by itself"), first.stdout)
        XCTAssertTrue(first.stdout.contains("health is off: nothing to import"), first.stdout)
        XCTAssertTrue(first.stdout.contains("ariata-agent run --config \(cli.configPath)"), "no systemd here: the command is printed\n\(first.stdout)")
        XCTAssertFalse((first.stdout + first.stderr).contains(Self.token), "the token is never printed")

        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: cli.configPath)[.posixPermissions] as? NSNumber)
        XCTAssertEqual(mode.intValue & 0o777, 0o600)
        let written = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertEqual(written.server.endpoint, receiver.endpoint)
        XCTAssertEqual(written.server.token.value, Self.token)
        XCTAssertEqual(written.server.deviceName, "test-box")
        XCTAssertNotNil(UUID(uuidString: written.server.deviceID), written.server.deviceID)
        XCTAssertTrue(written.location.enabled, "a device not there yet does not switch its stream off")
        XCTAssertTrue(written.microphone.enabled)
        XCTAssertEqual(written.storage.database, dir.file("agent.sqlite"), "the rest of the file is kept")

        // The server saw exactly the contract's request with an empty batch, and stored nothing.
        let requests = try receiver.requests()
        XCTAssertEqual(requests.count, 1)
        XCTAssertEqual(requests.first?.status, 200)
        XCTAssertEqual(requests.first?.records, 0)
        XCTAssertEqual(requests.first?.content_type, "application/json")
        XCTAssertTrue(requests.first?.user_agent?.hasPrefix("ariata-agent/") ?? false)
        XCTAssertNotNil(requests.first?.batch_id.flatMap(UUID.init(uuidString:)))

        // Again, with the token on the command line and no name: same device id, name kept;
        // --disable-failing asks for the old behaviour: the failing stream is switched off.
        let second = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token", Self.token, "--yes", "--disable-failing"])
        XCTAssertEqual(second.status, 0, second.stdout + second.stderr)
        XCTAssertTrue(second.stdout.contains("disabled location (--yes)"), second.stdout)
        let rewritten = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertEqual(rewritten.server.deviceID, written.server.deviceID)
        XCTAssertEqual(rewritten.server.deviceName, "test-box")
        XCTAssertFalse(rewritten.location.enabled)
    }

    /// Each failure kind has its own message, exit status 1, and writes nothing.
    func testEachVerificationFailureHasItsOwnMessageAndWritesNothing() throws {
        let dir = try TemporaryDirectory("onboard-fail")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token)
        defer { receiver.stop() }
        let cli = AgentCLI(directory: dir.path, configPath: dir.file("fresh.toml"))
        let nobody = "http://127.0.0.1:\(try FreePort.find())"

        let cases: [(what: String, arguments: [String], expected: [String])] = [
            ("bad token", ["--endpoint", receiver.endpoint, "--token", "wrong-token"],
             ["E002 the server refused the device token (HTTP 401)", "fix: copy the device token again"]),
            ("wrong path", ["--endpoint", receiver.endpoint, "--token", Self.token, "--ingest-path", "/v1/nope"],
             ["no ingest endpoint at \(receiver.endpoint)/v1/nope (HTTP 404)", "--ingest-path"]),
            ("endpoint with the path in it", ["--endpoint", receiver.endpoint + "/ingest", "--token", Self.token],
             ["(HTTP 404)", "the endpoint already ends in /ingest: give the base URL, \(receiver.endpoint)"]),
            ("nothing listening", ["--endpoint", nobody, "--token", Self.token],
             ["nothing accepts connections at 127.0.0.1:", "refused or unreachable", "that the server runs"]),
            ("plain HTTP on an https URL", ["--endpoint", receiver.endpoint.replacingOccurrences(of: "http:", with: "https:"), "--token", Self.token],
             ["the server speaks plain HTTP on that port", "use http://"]),
            ("not a URL", ["--endpoint", "ariata.example.org", "--token", Self.token],
             ["\"ariata.example.org\" is not an http:// or https:// URL", "give the server's base URL"]),
        ]
        for c in cases {
            let result = try cli.run(["onboard"] + c.arguments + ["--yes"])
            XCTAssertEqual(result.status, 1, "\(c.what): \(result.stdout) \(result.stderr)")
            for text in c.expected {
                XCTAssertTrue(result.stdout.contains(text), "\(c.what): expected \"\(text)\" in\n\(result.stdout)")
            }
            XCTAssertTrue(result.stderr.contains("the server could not be verified: nothing was written"), "\(c.what): \(result.stderr)")
            XCTAssertFalse(result.stdout.contains("2/5 Device checks"), "\(c.what): stops at step 1")
            XCTAssertFalse(FileManager.default.fileExists(atPath: cli.configPath), "\(c.what): nothing written")
            XCTAssertFalse((result.stdout + result.stderr).contains(Self.token), "\(c.what): the token is never printed")
        }
        // The failures that reached the receiver were answered as the messages say.
        XCTAssertEqual(try receiver.stats().statuses, ["401": 1, "404": 2])
    }

    func testATimeOutIsE001AndWritesNothing() throws {
        let dir = try TemporaryDirectory("onboard-hang")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token, arguments: ["--fault", "hang=5"])
        defer { receiver.stop() }
        let cli = AgentCLI(directory: dir.path, configPath: dir.file("fresh.toml"))
        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token", Self.token, "--timeout", "1", "--yes"])
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("E001 no answer within 1 s (network time-out)"), result.stdout)
        XCTAssertTrue(result.stdout.contains("--timeout"), "the hint names the option")
        XCTAssertFalse(FileManager.default.fileExists(atPath: cli.configPath))
        XCTAssertEqual(try receiver.stats().in_flight + (try receiver.stats().statuses["hang"] ?? 0), 1, "the request reached the hanging receiver")
    }

    /// A failed re-onboarding leaves the working config exactly as it was.
    func testAFailureLeavesAnExistingConfigUnchanged() throws {
        let dir = try TemporaryDirectory("onboard-keep")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token)
        defer { receiver.stop() }
        let cli = try seedConfig(dir)
        let ok = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token", Self.token, "--yes"])
        XCTAssertEqual(ok.status, 0, ok.stdout + ok.stderr)
        let before = try Data(contentsOf: URL(fileURLWithPath: cli.configPath))

        try receiver.addFaults(["status=503"])
        let failed = try cli.run(["onboard", "--yes"])
        XCTAssertEqual(failed.status, 1, failed.stdout + failed.stderr)
        XCTAssertTrue(failed.stdout.contains("E003 the server failed (HTTP 503)"), failed.stdout)
        let bad = try cli.run(["onboard", "--token", "revoked", "--yes"])
        XCTAssertEqual(bad.status, 1, bad.stdout + bad.stderr)
        XCTAssertTrue(bad.stdout.contains("E002"), bad.stdout)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: cli.configPath)), before)
    }

    func testWithoutATerminalOrFlagsItSaysWhatToPassAndWritesNothing() throws {
        let dir = try TemporaryDirectory("onboard-usage")
        let cli = AgentCLI(directory: dir.path, configPath: dir.file("fresh.toml"))

        // stdin is /dev/null: no terminal to ask on, and no --yes.
        let noTerminal = try cli.run(["onboard", "--endpoint", "http://127.0.0.1:9", "--token", "t"])
        XCTAssertEqual(noTerminal.status, 64, noTerminal.stdout + noTerminal.stderr)
        XCTAssertTrue(noTerminal.stderr.contains("standard input is not a terminal"), noTerminal.stderr)
        XCTAssertTrue(noTerminal.stderr.contains("--yes"), noTerminal.stderr)

        let noEndpoint = try cli.run(["onboard", "--token", "t", "--yes"])
        XCTAssertEqual(noEndpoint.status, 64)
        XCTAssertTrue(noEndpoint.stderr.contains("--endpoint is required"), noEndpoint.stderr)

        let noToken = try cli.run(["onboard", "--endpoint", "http://127.0.0.1:9", "--yes"])
        XCTAssertEqual(noToken.status, 64)
        XCTAssertTrue(noToken.stderr.contains("--code, --link, --source-id, --token or --token-file is required"), noToken.stderr)

        let missingFile = try cli.run(["onboard", "--endpoint", "http://127.0.0.1:9", "--token-file", dir.file("none"), "--yes"])
        XCTAssertEqual(missingFile.status, 64)
        XCTAssertTrue(missingFile.stderr.contains("cannot read it"), missingFile.stderr)

        let both = try cli.run(["onboard", "--token", "a", "--token-file", dir.file("none"), "--yes"])
        XCTAssertNotEqual(both.status, 0)
        XCTAssertTrue(both.stderr.contains("give one of --code, --link, --source-id, --token and --token-file"), both.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: cli.configPath))

        // A broken file is not overwritten.
        try "[server]\nendpoint = 3\n".write(toFile: cli.configPath, atomically: true, encoding: .utf8)
        let broken = try cli.run(["onboard", "--endpoint", "http://127.0.0.1:9", "--token", "t", "--yes"])
        XCTAssertEqual(broken.status, 78, broken.stdout + broken.stderr)
        XCTAssertTrue(broken.stderr.contains("server.endpoint"), broken.stderr)
        XCTAssertEqual(try String(contentsOfFile: cli.configPath, encoding: .utf8), "[server]\nendpoint = 3\n")
    }

    /// The file belongs to the service user (here `nobody`, a user every Debian system
    /// has), and the service user can enter the directory onboard made for it. As root
    /// only: otherwise the file is simply the caller's, 0600.
    func testTheConfigBelongsToTheServiceUser() throws {
        let dir = try TemporaryDirectory("onboard-owner")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token)
        defer { receiver.stop() }
        let path = dir.file("etc/agent.toml")
        let cli = AgentCLI(directory: dir.path, configPath: path)
        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token", Self.token,
                                  "--service-user", "nobody", "--yes"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        var file = stat()
        var directory = stat()
        XCTAssertEqual(stat(path, &file), 0)
        XCTAssertEqual(stat(dir.file("etc"), &directory), 0)
        XCTAssertEqual(file.st_mode & 0o777, 0o600)
        if getuid() == 0 {
            let nobody = try XCTUnwrap(getpwnam("nobody")).pointee
            XCTAssertEqual(file.st_uid, nobody.pw_uid, "owned by the service user")
            XCTAssertEqual(directory.st_gid, nobody.pw_gid, "the service user's group may enter the directory")
            XCTAssertNotEqual(directory.st_mode & S_IXGRP, 0)
            XCTAssertEqual(directory.st_mode & S_IXOTH, 0, "nobody else may")
            XCTAssertTrue(result.stdout.contains("(mode 0600, owner nobody)"), result.stdout)
        } else {
            XCTAssertEqual(file.st_uid, getuid(), "not root: the caller's own file")
        }
    }

    func testHelpExplainsEveryOptionAndTheExitCodes() throws {
        let dir = try TemporaryDirectory("onboard-help")
        let cli = AgentCLI(directory: dir.path, configPath: dir.file("x.toml"))
        let help = try cli.run(["help", "onboard"], withConfig: false)
        XCTAssertEqual(help.status, 0, help.stderr)
        for text in ["--endpoint", "--token", "--token-file", "--device-name", "--ingest-path", "--ca-file", "--timeout",
                     "--yes", "--config", "Exit status", "E002", "64"] {
            XCTAssertTrue(help.stdout.contains(text), "help lacks \(text):\n\(help.stdout)")
        }
    }
}
