import AgentCore
import Foundation
import TestRigs
import XCTest

/// `ariata-agent onboard` on a terminal: a real pseudo-terminal driven by pexpect, the
/// built binary, the reference receiver on 127.0.0.1.
final class OnboardInteractiveTests: XCTestCase {
    func testPromptsWithDefaultsACorrectedTokenAndDisablingAFailingStream() throws {
        let dir = try TemporaryDirectory("onboard-tty")
        let token = "tty-token-77aa"
        let receiver = try ReceiverRig(logDirectory: dir.path, token: token)
        defer { receiver.stop() }
        let gpsdPort = try FreePort.find()
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: """
            [location]
            source = "gpsd"
            gpsd_host = "127.0.0.1"
            gpsd_port = \(gpsdPort)
            [microphone]
            device = "null"
            """)
        let binary = try BuildProducts.executable("ariata-agent")
        let command = [binary, "onboard", "--config", cli.configPath]

        // First run: nothing configured. No pairing code (Enter): a token instead. A wrong
        // token is refused with E002 and only the token is asked again; gpsd's check fails
        // and the answer "y" disables location (the default keeps it).
        let first = try PexpectRig.run(command: command, script: """
            expect("Server URL (e.g. https://ariata.example.org): ")
            child.sendline("\(receiver.endpoint)")
            expect("Pairing code from the server's web UI (Enter to type a device token instead): ")
            child.sendline("")
            expect("Device token (from the server; not shown): ")
            child.sendline("not-the-token")
            expect("E002 the server refused the device token (HTTP 401)")
            expect("Device token (from the server; not shown): ")
            child.sendline("\(token)")
            expect("verified: the server took the device token")
            expect("Microphone (a number from the list, or an ALSA device name) [null]: ")
            child.sendline("")
            expect("gpsd at 127.0.0.1:\(gpsdPort): cannot reach gpsd")
            expect("fix: sudo apt install gpsd")
            expect("The location check failed. Disable location for now? [y/N]: ")
            child.sendline("y")
            expect("disabled location; after the fix")
            expect("Device name (how the server lists it) [")
            child.sendline("kitchen-pi")
            expect("wrote \(cli.configPath) (mode 0600")
            expect("health is off: nothing to import")
            expect("Done.")
            finish()
            """, directory: dir.path, environment: ["TERM": "xterm", "NO_COLOR": nil])
        XCTAssertEqual(first.status, 0, first.log + "\n" + first.transcript)
        let screen = first.transcript
        XCTAssertTrue(screen.contains("\u{1B}[31;1mFAIL\u{1B}[0m  gpsd at"), "colour on a terminal\n\(screen)")
        XCTAssertEqual(screen.components(separatedBy: "Server URL").count - 1, 1, "after E002 only the token is asked again\n\(screen)")
        XCTAssertFalse(screen.contains(token) || screen.contains("not-the-token"), "tokens are not echoed\n\(screen)")
        XCTAssertEqual(try receiver.stats().statuses, ["401": 1, "200": 1])

        let written = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertEqual(written.server.endpoint, receiver.endpoint)
        XCTAssertEqual(written.server.token.value, token)
        XCTAssertEqual(written.server.deviceName, "kitchen-pi")
        XCTAssertFalse(written.location.enabled)
        XCTAssertTrue(written.microphone.enabled)
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: cli.configPath)[.posixPermissions] as? NSNumber)
        XCTAssertEqual(mode.intValue & 0o777, 0o600)

        // Second run: every default comes from the file (the token's is never shown);
        // Enter takes them all, and the device keeps its id.
        let second = try PexpectRig.run(command: command, script: """
            expect("Server URL (e.g. https://ariata.example.org) [\(receiver.endpoint)]: ")
            child.sendline("")
            expect("Device token (from the server; not shown) [Enter keeps the current one]: ")
            child.sendline("")
            expect("verified")
            expect("Microphone (a number from the list, or an ALSA device name) [null]: ")
            child.sendline("")
            expect("Device name (how the server lists it) [kitchen-pi]: ")
            child.sendline("")
            expect("Done.")
            finish()
            """, directory: dir.path, environment: ["TERM": "xterm", "NO_COLOR": "1"])
        XCTAssertEqual(second.status, 0, second.log + "\n" + second.transcript)
        XCTAssertFalse(second.transcript.contains("\u{1B}["), "NO_COLOR is honoured\n\(second.transcript)")
        XCTAssertTrue(second.transcript.contains("ok    server"), second.transcript)
        XCTAssertFalse(second.transcript.contains("Disable location"), "a disabled stream is not checked\n\(second.transcript)")
        let again = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertEqual(again.server.deviceID, written.server.deviceID)
        XCTAssertEqual(again.server.token.value, token)
        XCTAssertEqual(again.server.deviceName, "kitchen-pi")
    }

    /// A wrong path asks for the endpoint and the ingest path again; Ctrl-D ends onboarding
    /// without writing anything.
    func testAWrongPathAsksForThePathAndEndOfInputWritesNothing() throws {
        let dir = try TemporaryDirectory("onboard-tty-path")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: "t0k")
        defer { receiver.stop() }
        let cli = AgentCLI(directory: dir.path, configPath: dir.file("fresh.toml"))
        let binary = try BuildProducts.executable("ariata-agent")
        let outcome = try PexpectRig.run(command: [binary, "onboard", "--config", cli.configPath, "--ingest-path", "/api/v2/in"], script: """
            expect("Server URL (e.g. https://ariata.example.org): ")
            child.sendline("\(receiver.endpoint)")
            expect("Pairing code from the server's web UI (Enter to type a device token instead): ")
            child.sendline("")
            expect("Device token (from the server; not shown): ")
            child.sendline("t0k")
            expect("no ingest endpoint at \(receiver.endpoint)/api/v2/in (HTTP 404)")
            expect("Server URL (e.g. https://ariata.example.org) [\(receiver.endpoint)]: ")
            child.sendline("")
            expect("Ingest path (below the server URL) [/api/v2/in]: ")
            child.sendeof()
            finish()
            """, directory: dir.path)
        XCTAssertEqual(outcome.status, 1, outcome.log + "\n" + outcome.transcript)
        XCTAssertTrue(outcome.transcript.contains("nothing was written"), outcome.transcript)
        XCTAssertFalse(FileManager.default.fileExists(atPath: cli.configPath))
    }

    /// Pairing on a terminal: a wrong code is refused and the code is asked again; the
    /// right one pairs, and the token it brought is verified.
    func testAPairingCodeOnATerminalIsAskedAgainWhenRefused() throws {
        let dir = try TemporaryDirectory("onboard-tty-code")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: "tty-paired")
        defer { receiver.stop() }
        try receiver.addPairingCode("K7M2Q9")
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: "[location]\nenabled = false\n[microphone]\nenabled = false\n")
        let binary = try BuildProducts.executable("ariata-agent")
        let outcome = try PexpectRig.run(command: [binary, "onboard", "--config", cli.configPath], script: """
            expect("Server URL (e.g. https://ariata.example.org): ")
            child.sendline("\(receiver.endpoint)")
            expect("Pairing code from the server's web UI (Enter to type a device token instead): ")
            child.sendline("WRONG1")
            expect("Invalid or expired pairing code")
            expect("Pairing code from the server's web UI (Enter to type a device token instead): ")
            child.sendline("K7M2Q9")
            expect("paired: the server gave this device its token")
            expect("verified: the server took the device token")
            expect("Device name (how the server lists it) [")
            child.sendline("desk")
            expect("Done.")
            finish()
            """, directory: dir.path, environment: ["TERM": "xterm", "NO_COLOR": "1"])
        XCTAssertEqual(outcome.status, 0, outcome.log + "\n" + outcome.transcript)
        XCTAssertFalse(outcome.transcript.contains("tty-paired"), "the token is never shown")
        XCTAssertEqual(try AgentConfig.load(path: cli.configPath, environment: [:]).server.token.value, "tty-paired")
    }
}
