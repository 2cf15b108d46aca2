import AgentCore
import Foundation
import TestRigs
import XCTest

/// `[box]`: read, checked and written back; the key kept like the token.
final class BoxConfigTests: XCTestCase {
    private let node = String(repeating: "c3", count: 32)
    private let seed = String(repeating: "5a", count: 32)

    func testAPairedBoxReadsAndRoundTrips() throws {
        let text = """
            [server]
            endpoint = "http://192.168.1.20:8000"
            device_id = "0f8fad5b-d9cb-469f-a165-70867728950e"

            [box]
            node_id = "\(node)"
            relay_url = "https://relay.example.org"
            direct_addresses = ["192.168.1.20:51820", "[fd00::2]:51820"]
            applet_id = "a1"
            device_id = "dev-1"
            key = "\(seed)"
            silent_audio = "send"
            """
        let config = try AgentConfig(toml: text, file: "agent.toml")
        XCTAssertTrue(config.box.isPaired)
        XCTAssertTrue(config.isOnboarded, "a box needs no token")
        XCTAssertFalse(config.server.isOnboarded)
        XCTAssertEqual(config.box.directAddresses, ["192.168.1.20:51820", "[fd00::2]:51820"])
        XCTAssertEqual(config.box.relayURL, "https://relay.example.org")
        XCTAssertEqual(config.box.silentAudio, .send)
        XCTAssertEqual(config.box.key, Secret(seed))
        let dir = try TemporaryDirectory()
        let path = dir.path + "/agent.toml"
        try ConfigWriter.write(config, to: path, owner: nil)
        let again = try AgentConfig.load(path: path, environment: [:])
        XCTAssertEqual(again.box, config.box)
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600, "the file holds the device's key")
    }

    func testAFileWithoutABoxWritesNone() throws {
        let config = try AgentConfig(toml: "[server]\nendpoint = \"https://a.example\"\ntoken = \"t\"\n", file: "agent.toml")
        XCTAssertFalse(config.box.isPaired)
        XCTAssertTrue(config.isOnboarded)
        let dir = try TemporaryDirectory()
        try ConfigWriter.write(config, to: dir.path + "/agent.toml", owner: nil)
        let written = try String(contentsOfFile: dir.path + "/agent.toml", encoding: .utf8)
        XCTAssertFalse(written.contains("[box]"), written)
    }

    func testBadValuesAreNamed() {
        for (line, key) in [("node_id = \"ABC\"", "box.node_id"), ("key = \"\(seed.uppercased())\"", "box.key"),
                            ("direct_addresses = [\"192.168.1.20\"]", "box.direct_addresses"),
                            ("direct_addresses = \"192.168.1.20:51820\"", "box.direct_addresses"),
                            ("silent_audio = \"drop\"", "box.silent_audio"), ("relay_url = \"relay\"", "box.relay_url")] {
            XCTAssertThrowsError(try AgentConfig(toml: "[box]\n\(line)\n", file: "agent.toml"), line) { error in
                XCTAssertTrue("\(error)".contains(key), "\(line): \(error)")
                XCTAssertFalse("\(error)".contains(seed.uppercased()) && key != "box.key", "\(error)")
            }
        }
    }
}
