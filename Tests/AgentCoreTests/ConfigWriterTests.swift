import AgentCore
import Foundation
import TestRigs
import XCTest

final class ConfigWriterTests: XCTestCase {
    func testWrittenConfigReadsBackTheSameAndIs0600() throws {
        let dir = try TemporaryDirectory("config-writer")
        var config = AgentConfig()
        config.server.endpoint = "https://ariata.example.org"
        config.server.token = Secret("tok \"with\" quotes\\and\nnewline")
        config.server.deviceID = "6F1C0D3A-1111-4222-8333-444455556666"
        config.server.deviceName = "Kitchen Pi"
        config.location.enabled = false
        config.microphone.device = "plughw:CARD=Mic,DEV=0"
        config.health.enabled = true
        config.health.sources = [HealthSourceConfig(kind: .serial, path: "/dev/ttyUSB0", format: .keyvalue),
                                 HealthSourceConfig(kind: .file, path: "/var/log/hr.csv", format: .csv, name: "watch")]
        let path = dir.file("etc/agent.toml")
        config.file = path
        try ConfigWriter.write(config, to: path)

        let back = try AgentConfig.load(path: path, environment: [:])
        XCTAssertEqual(back, config)
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)
        XCTAssertEqual(mode.intValue & 0o777, 0o600)
        XCTAssertFalse(try FileManager.default.contentsOfDirectory(atPath: dir.file("etc")).contains { $0.contains(".tmp-") })
    }
}
