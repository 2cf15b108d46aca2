import AgentCore
import Foundation
import TestRigs
import XCTest

/// Every key of every section, set away from its default, survives the writer: what
/// `onboard` saves reads back as the configuration it was given.
final class ConfigRoundTripTests: XCTestCase {
    /// The repository's reference file.
    static let examplePath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("etc/agent.toml").path

    /// A configuration with no key at its default (`token_file` aside: see
    /// `testTokenFileRoundTrips`); arrays of tables (zones, health sources) only when
    /// `arrays`, since they make the writer render a new file instead of editing.
    static func everyKeyChanged(arrays: Bool = true) -> AgentConfig {
        var c = AgentConfig()
        c.server.endpoint = "https://ariata.example.org"
        c.server.ingestPath = "/api/ingest"
        c.server.token = Secret("tok-\"quoted\"")
        c.server.deviceID = "6F1C0D3A-1111-4222-8333-444455556666"
        c.server.deviceName = "Kitchen Pi"
        c.server.caFile = "/etc/ariata/ca.pem"
        c.server.gzip = true
        c.server.connectTimeout = 20
        c.server.requestTimeout = 90
        c.storage.database = "/data/queue.sqlite"
        c.storage.retentionDays = 9
        c.storage.minFreeMB = 7
        c.storage.maxQueueMB = 300
        c.storage.syncSeconds = 0
        c.upload.interval = 60
        c.upload.batchMaxRecords = 50
        c.upload.batchMaxBytes = 20_000
        c.location.enabled = false
        c.location.gpsdHost = "gps.lan"
        c.location.gpsdPort = 2948
        c.location.interval = 5
        c.microphone.enabled = false
        c.microphone.device = "plughw:CARD=Mic,DEV=0"
        c.microphone.bitrate = 24_000
        c.microphone.chunkSeconds = 20
        c.microphone.overlapSeconds = 3
        c.microphone.complexity = 3
        c.microphone.journalSyncSeconds = 2
        c.health.commitInterval = 60
        c.daemon.healthInterval = 15
        c.daemon.trustSystemClock = true
        c.metrics.textfile = "/var/lib/prometheus/node-exporter/ariata-agent.prom"
        c.power.enabled = false
        c.power.sysfsPath = "/tmp/power_supply"
        c.power.batteryUploadFactor = 3
        c.power.lowBatteryPercent = 20
        c.power.queueNearLimitPercent = 90
        c.logLevel = "debug"
        if arrays {
            c.location.exclude = [PrivacyZone(latitude: 52.52, longitude: 13.405, radius: 200, name: "home", action: .coarsen),
                                  PrivacyZone(latitude: -33.5, longitude: 151.25, radius: 75)]
            c.health.enabled = true
            var serial = HealthSourceConfig(kind: .serial, path: "/dev/ttyUSB0", format: .keyvalue, name: "chest")
            serial.baud = 115_200
            var file = HealthSourceConfig(kind: .file, path: "/var/log/hr.csv", format: .csv)
            file.backfillDays = 0
            c.health.sources = [serial, file]
        }
        return c
    }

    /// A new file (`render`).
    func testEveryKeyRoundTripsThroughANewFile() throws {
        let dir = try TemporaryDirectory("config-roundtrip")
        var config = Self.everyKeyChanged()
        config.file = dir.file("agent.toml")
        try ConfigWriter.write(config, to: config.file)
        XCTAssertEqual(try AgentConfig.load(path: config.file, environment: [:]), config)
    }

    /// Over the shipped reference file, edited key by key: its comments stay.
    func testEveryKeyRoundTripsThroughAnEditOfTheReferenceFile() throws {
        let dir = try TemporaryDirectory("config-roundtrip")
        var config = Self.everyKeyChanged(arrays: false)
        config.file = dir.file("agent.toml")
        let reference = try String(contentsOfFile: Self.examplePath, encoding: .utf8)
        try reference.write(toFile: config.file, atomically: true, encoding: .utf8)
        try ConfigWriter.write(config, to: config.file)
        XCTAssertEqual(try AgentConfig.load(path: config.file, environment: [:]), config)
        let written = try String(contentsOfFile: config.file, encoding: .utf8)
        XCTAssertTrue(written.contains("# Privacy zones: places where location is never recorded"), "the file was rendered anew, not edited")
    }

    /// `token_file` stands instead of `token`: the token is read from that file.
    func testTokenFileRoundTrips() throws {
        let dir = try TemporaryDirectory("config-roundtrip")
        try "tok-from-file\n".write(toFile: dir.file("token"), atomically: true, encoding: .utf8)
        var config = Self.everyKeyChanged()
        config.file = dir.file("agent.toml")
        config.server.tokenFile = dir.file("token")
        config.server.token = Secret("tok-from-file")
        try ConfigWriter.write(config, to: config.file)
        XCTAssertEqual(try AgentConfig.load(path: config.file, environment: [:]), config)
        XCTAssertFalse(try String(contentsOfFile: config.file, encoding: .utf8).contains("tok-from-file"))
    }
}
