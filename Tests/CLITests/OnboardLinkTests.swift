import AgentCore
import Foundation
import Setup
import TestRigs
import XCTest

/// Pairing with both server generations, the built binary against the reference receiver:
/// `onboard --link` and `--source-id` against its Virtues mode (the device id is the
/// token), `--code` against its Ariata mode, and the answers that must be told apart
/// (the code flow Virtues retired, the login wall that refuses every device).
final class OnboardLinkTests: XCTestCase {
    private func virtues(_ name: String) throws -> (TemporaryDirectory, ReceiverRig, AgentCLI) {
        let dir = try TemporaryDirectory(name)
        let receiver = try ReceiverRig(logDirectory: dir.path, token: "not-this-device", arguments: ["--generation", "virtues"])
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: """
            [location]
            enabled = false
            [microphone]
            enabled = false
            """)
        return (dir, receiver, cli)
    }

    private func fileBytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    /// The person links the id shown while onboard waits: onboard sees it, verifies the
    /// ingest endpoint with the id as the token and writes the config (0600) with that id.
    func testLinkShowsTheIDAndItsQRCodeWaitsForTheLinkThenWritesTheConfig() throws {
        let (dir, receiver, cli) = try virtues("link-ok")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        let (onboard, id, shown) = try startLinking(cli, receiver, dir, extra: ["--device-name", "desk-pi"])
        defer { onboard.stop() }
        XCTAssertTrue(onboard.isRunning, "it waits for the link")

        // The QR code holds the id: its structure, the library's own modules, and what a reader reads.
        let qr = try XCTUnwrap(TerminalQRReader(screen: shown), shown)
        let expected = try XCTUnwrap(QRCode(text: id))
        let symbol = qr.symbol
        XCTAssertEqual(symbol.count, 4 * expected.version + 17, "a version-\(expected.version) symbol")
        XCTAssertEqual(symbol.flatMap { $0.map(!) }, expected.modules, "drawn module for module")
        XCTAssertEqual(qr.quietZone, QRCode.quietZone)
        for (row, column) in [(0, 0), (0, symbol.count - 7), (symbol.count - 7, 0)] {
            XCTAssertTrue(qr.hasFinderPattern(row: row, column: column), "finder pattern at \(row),\(column)")
        }
        XCTAssertFalse(qr.hasFinderPattern(row: symbol.count - 7, column: symbol.count - 7), "no fourth finder")
        XCTAssertFalse(shown.contains("\u{1B}["), "no colour escapes with NO_COLOR")
        do {
            let read = try qr.decoded(directory: dir.path)
            XCTAssertEqual(read, id, "a QR reader reads the id")
        } catch let missing as NotInstalled {
            print("not decoded: \(missing)")
        }

        try receiver.link(deviceID: id)
        XCTAssertEqual(try receiver.links().map(\.deviceID), [id], "linked through the web UI's route")
        XCTAssertEqual(onboard.wait(timeout: 30), 0, onboard.stdout() + onboard.stderr())
        let out = onboard.stdout()
        XCTAssertTrue(out.contains("ok    link: linked after"), out)
        XCTAssertTrue(out.contains("verified: the server took the device token"), out)
        let written = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertEqual(written.server.deviceID, id)
        XCTAssertEqual(written.server.token.value, id, "on Virtues the device id is the token")
        XCTAssertEqual(written.server.deviceName, "desk-pi")
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: cli.configPath)[.posixPermissions] as? NSNumber)
        XCTAssertEqual(mode.intValue & 0o777, 0o600)
        XCTAssertEqual(try receiver.stats().statuses, ["200": 1], "one ingest request: the verification with the id")

        // Onboarding again keeps the id, and the server already knows it: no waiting.
        let again = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--link", "--link-timeout", "1", "--yes"])
        XCTAssertEqual(again.status, 0, again.stdout + again.stderr)
        XCTAssertTrue(again.stdout.contains("the server has already linked this device's id \(id)"), again.stdout)
        XCTAssertFalse(again.stdout.contains("waiting for the server"), again.stdout)
    }

    /// `onboard --link --yes` started, up to the point where it waits: the process, the id it shows, its output.
    private func startLinking(_ cli: AgentCLI, _ receiver: ReceiverRig, _ dir: TemporaryDirectory,
                              extra: [String] = []) throws -> (ChildProcess, String, String) {
        let binary = try BuildProducts.executable("ariata-agent")
        let onboard = try ChildProcess(binary, ["onboard", "--config", cli.configPath, "--endpoint", receiver.endpoint, "--link", "--yes"] + extra,
                                       name: "onboard", logDirectory: dir.path, environment: ["NO_COLOR": "1"])
        var shown = ""
        try waitUntil("onboard to show the id and wait", timeout: 30) {
            shown = onboard.stdout()
            return shown.contains("waiting for the server to link it (up to 10 min; Ctrl-C stops)")
        }
        let id = try XCTUnwrap(shown.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .first { UUID(uuidString: $0) != nil }, shown)
        return (onboard, id, shown)
    }

    /// The server away for a while (restarting) during the wait: said once, and the wait goes on.
    func testTheWaitOutlastsTheServerRestarting() throws {
        let (dir, receiver, cli) = try virtues("link-restart")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        let (onboard, id, _) = try startLinking(cli, receiver, dir)
        defer { onboard.stop() }

        receiver.stop()
        try waitUntil("onboard to notice the server is away", timeout: 30) {
            onboard.stdout().contains("warn  link: nothing accepts connections at 127.0.0.1:\(receiver.port)")
        }
        XCTAssertTrue(onboard.isRunning, "still waiting")
        try receiver.start()
        try receiver.link(deviceID: id)

        XCTAssertEqual(onboard.wait(timeout: 30), 0, onboard.stdout() + onboard.stderr())
        let out = onboard.stdout()
        XCTAssertTrue(out.contains("; still waiting"), out)
        XCTAssertEqual(out.components(separatedBy: "warn  link:").count - 1, 1, "the same problem is said once\n\(out)")
        XCTAssertEqual(try AgentConfig.load(path: cli.configPath, environment: [:]).server.token.value, id)
    }

    func testLinkGivesUpAfterItsTimeLimitAndWritesNothing() throws {
        let (dir, receiver, cli) = try virtues("link-timeout")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        let before = try fileBytes(cli.configPath)

        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--link", "--link-timeout", "3", "--yes"])

        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("waiting for the server to link it (up to 3 s; Ctrl-C stops)"), result.stdout)
        XCTAssertTrue(result.stderr.contains("the server did not link this device within 3 s: nothing was written; link the id in the web UI, then run 'ariata-agent onboard --link' again (it shows a new id: this one is not kept)"),
                      result.stderr)
        XCTAssertEqual(try fileBytes(cli.configPath), before, "the file is untouched")
        XCTAssertEqual(try receiver.stats().requests, 0, "the ingest endpoint was never asked")
    }

    /// Ctrl-C on the terminal while onboard waits: it says so and writes nothing. The code
    /// is drawn in colour there (white on black) and reads the same.
    func testCtrlCWhileWaitingForTheLinkSaysSoAndWritesNothing() throws {
        let (dir, receiver, cli) = try virtues("link-ctrl-c")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        let before = try fileBytes(cli.configPath)
        let binary = try BuildProducts.executable("ariata-agent")

        let outcome = try PexpectRig.run(command: [binary, "onboard", "--config", cli.configPath, "--endpoint", receiver.endpoint, "--link"],
                                         script: """
            expect("waiting for the server to link it (up to 10 min; Ctrl-C stops) ...")
            child.sendintr()
            expect("stopped waiting for the link (Ctrl-C): nothing was written")
            finish()
            """, directory: dir.path, environment: ["TERM": "xterm", "NO_COLOR": nil])

        XCTAssertEqual(outcome.status, 130, outcome.log + "\n" + outcome.transcript)
        XCTAssertEqual(try fileBytes(cli.configPath), before)
        XCTAssertTrue(outcome.transcript.contains("\u{1B}[97;40m"), "white on black on a terminal")
        let qr = try XCTUnwrap(TerminalQRReader(screen: outcome.transcript), outcome.transcript)
        let id = try XCTUnwrap(outcome.transcript.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .first { UUID(uuidString: $0) != nil })
        XCTAssertEqual(qr.symbol.flatMap { $0.map(!) }, try XCTUnwrap(QRCode(text: id)).modules)
    }

    /// The login wall of Virtues' 2026-02 release: `--link` stops at once and names it.
    func testLinkAgainstAServerThatRefusesEveryDeviceStopsAtOnceAndSaysWhy() throws {
        let (dir, receiver, cli) = try virtues("link-wall")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        try receiver.setLoginWall(true)

        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--link", "--yes"])

        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stderr.contains("the server refuses every device, not just this token"), result.stderr)
        XCTAssertTrue(result.stdout.contains("update the server"), result.stdout)
        XCTAssertFalse(result.stdout.contains("waiting for the server"), "no waiting for a link that cannot work\n\(result.stdout)")
    }

    /// The same wall in the verification of a typed-in token: not "copy the token again".
    func testTheLoginWallsUnauthorizedIsNotCalledAWrongToken() throws {
        let (dir, receiver, cli) = try virtues("token-wall")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        let tokenFile = dir.file("token")
        try receiver.token.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        try receiver.setLoginWall(true)

        let walled = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token-file", tokenFile, "--yes"])
        XCTAssertEqual(walled.status, 1, walled.stdout + walled.stderr)
        XCTAssertTrue(walled.stdout.contains("E002 HTTP 401: the server refuses every device, not just this token"), walled.stdout)
        XCTAssertTrue(walled.stdout.contains("fix: no token passes this check: update the server"), walled.stdout)
        XCTAssertFalse(walled.stdout.contains("copy the device token again"), walled.stdout)

        // Without the wall a wrong token is a wrong token.
        try receiver.setLoginWall(false)
        try "wrong".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let wrong = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token-file", tokenFile, "--yes"])
        XCTAssertEqual(wrong.status, 1)
        XCTAssertTrue(wrong.stdout.contains("E002 the server refused the device token (HTTP 401)"), wrong.stdout)
        XCTAssertFalse(wrong.stdout.contains("refuses every device"), wrong.stdout)
    }

    /// The uploader meets the same wall: its E002 says every device is refused, nothing is dropped.
    func testTheUploaderNamesTheLoginWallAndKeepsTheRecords() throws {
        let dir = try TemporaryDirectory("sync-wall")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: "linked-id", arguments: ["--generation", "virtues"])
        defer { receiver.stop() }
        let database = try AgentDatabase(path: dir.file("agent.sqlite"))
        for second in 0..<3 {
            try database.recordQueue.enqueue(try NewRecord(stream: .location, capturedAt: Date(), fields: [
                "timestamp": RFC3339.string(from: Date().addingTimeInterval(Double(second) - 100)), "latitude": 52.5, "longitude": 13.4,
            ]))
        }
        let cli = try AgentCLI.writeConfig(in: dir.path, server: """
            endpoint = "\(receiver.endpoint)"
            token = "linked-id"
            device_id = "linked-id"
            """)
        try receiver.setLoginWall(true)

        let walled = try cli.run(["sync"])

        XCTAssertEqual(walled.status, 1, walled.stdout + walled.stderr)
        XCTAssertTrue(walled.stdout.contains("location: E002 HTTP 401: the server refuses every device, not just this token"), walled.stdout)
        XCTAssertTrue(walled.stdout.contains("update the server"), walled.stdout)
        XCTAssertFalse(walled.stdout.contains("get a new device token"), walled.stdout)
        XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .pending), 3, "nothing is dropped")
    }

    /// The QR flow: a pending source completed with the device id and its device_info;
    /// Virtues' `available_streams` shape read (no stream reported missing).
    func testSourceIDCompletesAPendingSourceAndTheIDBecomesTheToken() throws {
        let (dir, receiver, cli) = try virtues("source-id")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        let source = try receiver.addPendingPairing()

        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--source-id", source, "--device-name", "van", "--yes"])

        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("pairing with \(receiver.endpoint)/api/devices/pairing/\(source)/complete as \"van\""), result.stdout)
        XCTAssertTrue(result.stdout.contains("paired: the server gave this device its token"), result.stdout)
        XCTAssertFalse(result.stdout.contains("does not list"), "Virtues' descriptor shape is read\n\(result.stdout)")
        let written = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertEqual(written.server.token.value, written.server.deviceID)
        let link = try XCTUnwrap(try receiver.links().first)
        XCTAssertEqual(link.deviceID, written.server.deviceID)
        XCTAssertEqual(link.how, "qr")
        XCTAssertEqual(link.deviceInfo?["device_id"], written.server.deviceID)
        XCTAssertEqual(link.deviceInfo?["device_name"], "van")

        // Used, expired and unknown sources: refused, nothing written, the server quoted.
        let before = try fileBytes(cli.configPath)
        let expired = try receiver.addPendingPairing(ttl: -1)
        let other = AgentCLI(directory: dir.path, configPath: dir.file("other.toml"))
        for (id, says) in [(source, "Pairing session already claimed by another device"),
                           (expired, "Pairing session expired. Please generate a new QR code."),
                           ("source_nothing", "the server has no such pairing session (HTTP 404: Pairing session not found)")] {
            try? FileManager.default.removeItem(atPath: other.configPath)
            let refused = try other.run(["onboard", "--endpoint", receiver.endpoint, "--source-id", id, "--yes"])
            XCTAssertEqual(refused.status, 1, "\(id): \(refused.stdout) \(refused.stderr)")
            XCTAssertTrue(refused.stderr.contains(says) && refused.stderr.contains("ask the server's web UI for a new QR code"), "\(id): \(refused.stderr)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: other.configPath), "\(id): nothing written")
        }
        XCTAssertEqual(try fileBytes(cli.configPath), before)
        let bad = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--source-id", "../x", "--yes"])
        XCTAssertEqual(bad.status, 64, "a source id that is not one is a usage error")
        XCTAssertTrue(bad.stderr.contains("--source-id ../x: give the source id the server's QR code holds"), bad.stderr)
        let notQR = try cli.run(["onboard", "--source-id", #"{"s": 3}"#, "--yes"])
        XCTAssertEqual(notQR.status, 64)
        XCTAssertTrue(notQR.stderr.contains("is not the text of a pairing QR code"), notQR.stderr)
    }

    /// The QR code's whole text, as a phone read it: its endpoint (the server's `/api`
    /// address) and its source id, no --endpoint needed.
    func testSourceIDTakesTheQRCodesWholeText() throws {
        let (dir, receiver, cli) = try virtues("source-qr-text")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        let source = try receiver.addPendingPairing()

        let result = try cli.run(["onboard", "--source-id", #"{"e":"\#(receiver.endpoint)/api","s":"\#(source)"}"#, "--yes"])

        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        let written = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertEqual(written.server.endpoint, receiver.endpoint)
        XCTAssertEqual(written.server.token.value, written.server.deviceID)
        XCTAssertEqual(try receiver.links().map(\.how), ["qr"])
    }

    /// `--code` to a Virtues server: told apart from a wrong code, pointing at --link.
    func testACodeToAVirtuesServerSaysItLinksByIDAndSuggestsLink() throws {
        let (dir, receiver, cli) = try virtues("code-virtues")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        let before = try fileBytes(cli.configPath)

        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--code", "A1B2C3", "--yes"])

        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("Pairing code flow is deprecated"), result.stdout)
        XCTAssertTrue(result.stderr.contains("this server links devices by their id: run 'ariata-agent onboard --endpoint \(receiver.endpoint) --link'"),
                      result.stderr)
        XCTAssertFalse(result.stdout.contains("ask the server's web UI for a new one"), "not a wrong code\n\(result.stdout)")
        XCTAssertEqual(try fileBytes(cli.configPath), before)
    }

    /// Ariata compares codes exactly and shows them in upper case: one typed in lower
    /// case with spaces around it pairs.
    func testALowerCaseCodeStillPairsWithAnAriataServer() throws {
        let dir = try TemporaryDirectory("code-lower")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: "ariata-token-5c")
        defer { withExtendedLifetime(dir) { receiver.stop() } }
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: "[location]\nenabled = false\n[microphone]\nenabled = false")
        try receiver.addPairingCode("K7M2Q9")

        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--code", " k7m2q9 ", "--yes"])

        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertEqual(try AgentConfig.load(path: cli.configPath, environment: [:]).server.token.value, "ariata-token-5c")
        XCTAssertEqual(try receiver.pairings().count, 1)
    }
}
