import AgentCore
import Foundation
import TestRigs
import Upload
import XCTest

/// `ariata-agent onboard --endpoint http://<box>:8000 --code <6 digits>` against the
/// reference receiver playing a Virtues box: pairing on plain HTTP, then a request over
/// iroh through the bridge. Inside a network namespace with loopback alone (scripts/test.sh).
final class BoxOnboardTests: XCTestCase {
    private func setUp(_ name: String, arguments: [String] = []) throws -> (TemporaryDirectory, ReceiverRig, AgentCLI) {
        try LoopbackOnlyNamespace.requireInside()
        let dir = try TemporaryDirectory(name)
        let box = try ReceiverRig.box(logDirectory: dir.path, arguments: arguments)
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: """
            [location]
            gpsd_host = "127.0.0.1"
            gpsd_port = \(try FreePort.find())
            [microphone]
            device = "null"
            """)
        return (dir, box, cli)
    }

    func testTheRightCodePairsAndTheBoxAnswersOverIroh() throws {
        let (dir, box, cli) = try setUp("box-pair")
        defer { withExtendedLifetime(dir) { box.stop() } }
        let code = try box.addBoxPairingCode()

        let result = try cli.run(["onboard", "--endpoint", box.endpoint, "--code", code, "--device-name", "shelf-pi", "--yes"])

        let output = result.stdout + result.stderr
        XCTAssertEqual(result.status, 0, output)
        XCTAssertTrue(result.stdout.contains("Virtues box 0.1.9, build 5e1c0de"), result.stdout)
        XCTAssertTrue(result.stdout.contains("paired with Virtues box"), result.stdout)
        XCTAssertTrue(result.stdout.contains("box over iroh: reached the box"), result.stdout)
        XCTAssertTrue(result.stdout.contains("directly on the LAN"), result.stdout)
        XCTAssertTrue(result.stdout.contains("has no stream switches"), result.stdout)

        let written = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertTrue(written.box.isPaired)
        XCTAssertTrue(written.server.token.isEmpty, "a box takes no token")
        XCTAssertEqual(written.microphone.chunkSeconds, 300, "300 s chunks on a box, as on Virtues")
        let endpoint = try box.boxEndpoint()
        XCTAssertEqual(written.box.nodeID, endpoint.endpoint_id)
        XCTAssertEqual(written.box.directAddresses, endpoint.direct_addrs)
        XCTAssertNil(written.box.relayURL, "the test box is LAN-only")
        let key = try DeviceKey(seedHex: written.box.key)
        XCTAssertFalse(output.contains(written.box.key.value), "the key is never printed")
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: cli.configPath)[.posixPermissions] as? NSNumber)
        XCTAssertEqual(mode.intValue & 0o777, 0o600, "the file holds the key")

        let device = try XCTUnwrap(try box.boxDevices().first)
        XCTAssertEqual(device.kind, "sensor")
        XCTAssertEqual(device.source, "ios", "without it a sensor gets no ingest applet")
        XCTAssertEqual(device.deviceNodeID, key.endpointID, "64 lower-case hex, as the box compares it")
        XCTAssertEqual(device.label, "shelf-pi")
        XCTAssertEqual(device.deviceInfo["os"] as? String, "linux")
        XCTAssertEqual(device.deviceInfo["client"] as? String, AgentVersion.userAgent)
        XCTAssertEqual(written.box.appletID, device.appletIDs["ios_ingest"])
        XCTAssertEqual(written.box.deviceID, device.deviceID)
        XCTAssertEqual(try box.boxActivity().applet_ids_calls.count, 1, "the check over iroh asked for the applet ids")

        // doctor asks again, over iroh.
        let doctor = try cli.run(["doctor"])
        XCTAssertTrue(doctor.stdout.contains("box over iroh: reached the box"), doctor.stdout + doctor.stderr)

        // Pairing again keeps the device's identity: the box keeps one device.
        let again = try cli.run(["onboard", "--endpoint", box.endpoint, "--code", try box.addBoxPairingCode(), "--yes"])
        XCTAssertEqual(again.status, 0, again.stdout + again.stderr)
        XCTAssertEqual(try AgentConfig.load(path: cli.configPath, environment: [:]).box.key, written.box.key)
        XCTAssertEqual(try box.boxDevices().count, 1)
    }

    /// A wrong code, too many tries and a box whose endpoint is not up yet each say so and
    /// write nothing.
    func testRefusalsWriteNothingAndSayWhy() throws {
        let (dir, box, cli) = try setUp("box-refused")
        defer { withExtendedLifetime(dir) { box.stop() } }
        let before = try Data(contentsOf: URL(fileURLWithPath: cli.configPath))
        func expectRefusal(_ code: String, says: String, status: Int32 = 1, line: UInt = #line) throws {
            let result = try cli.run(["onboard", "--endpoint", box.endpoint, "--code", code, "--yes"])
            XCTAssertEqual(result.status, status, result.stdout + result.stderr, line: line)
            XCTAssertTrue((result.stdout + result.stderr).contains(says), "\(says): \(result.stdout) \(result.stderr)", line: line)
            if status == 1 { XCTAssertTrue(result.stderr.contains("nothing was written"), result.stderr, line: line) }
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: cli.configPath)), before, "the file is untouched", line: line)
        }
        try expectRefusal("000000", says: "wrong, used or expired")
        try expectRefusal("12345", says: "has 6 digits", status: 64)
        let token = try cli.run(["onboard", "--endpoint", box.endpoint, "--token", "abc", "--yes"])
        XCTAssertEqual(token.status, 64, token.stdout + token.stderr)
        XCTAssertTrue(token.stderr.contains("has no device tokens"), token.stdout + token.stderr)

        try box.configureBox(reachTicket: false)
        try expectRefusal(try box.addBoxPairingCode(), says: "pair again in a minute")
        try box.configureBox(reachTicket: true)

        // Ten tries from one address in 30 minutes, then 429 with the wait in its body.
        for _ in 0..<10 {
            _ = try cli.run(["onboard", "--endpoint", box.endpoint, "--code", "999999", "--yes"])
        }
        try expectRefusal(try box.addBoxPairingCode(), says: "too many tries")
        XCTAssertEqual(try box.boxActivity().pair_attempts.last?.status, 429)
    }

    /// An older box names the ids `action_ids`: the same pairing.
    func testAnOlderBoxsActionIDsAreRead() throws {
        let (dir, box, cli) = try setUp("box-older")
        defer { withExtendedLifetime(dir) { box.stop() } }
        try box.configureBox(olderBox: true)
        let result = try cli.run(["onboard", "--endpoint", box.endpoint, "--code", try box.addBoxPairingCode(), "--yes"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        let written = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertEqual(written.box.appletID, try box.boxDevices().first?.appletIDs["ios_ingest"])
    }
}
