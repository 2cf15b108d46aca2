import AgentCore
import Foundation
import TestRigs
import XCTest

/// Every key of every section, set away from its default, survives the writer: what
/// `onboard` saves reads back as the configuration it was given.
final class ConfigRoundTripTests: XCTestCase {
    /// The repository's reference file.
    static let examplePath = Repository.path("etc/agent.toml")

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
        c.upload.onMetered = .all
        c.upload.meteredNetworks = ["Ana's iPhone", "Campervan Wi-Fi"]
        c.location.enabled = false
        c.location.gpsdHost = "gps.lan"
        c.location.gpsdPort = 2948
        c.location.interval = 5
        c.location.source = .geoclue
        c.location.accuracyLevel = .street
        c.location.distanceThreshold = 100
        c.location.stationaryInterval = 300
        c.location.minDistance = 25
        c.location.maxAccuracy = 150
        c.location.geoclueMode = .perFix
        c.location.geoclueFixInterval = 600
        c.microphone.enabled = false
        c.microphone.device = "plughw:CARD=Mic,DEV=0"
        c.microphone.fallbackDevice = "none"
        c.microphone.bitrate = 24_000
        c.microphone.quietBitrate = 8_000
        c.microphone.quietRoom = .coded
        c.microphone.soundThresholdDB = -48
        c.microphone.soundMarginDB = 6
        c.microphone.chunkSeconds = 20
        c.microphone.overlapSeconds = 3
        c.microphone.complexity = 3
        c.microphone.journalSyncSeconds = 2
        c.microphone.mutedPlaceFixAge = 600
        c.microphone.silenceThresholdDB = -42
        c.microphone.uploadSilent = false
        c.health.commitInterval = 60
        c.daemon.checkInterval = 15
        c.daemon.trustSystemClock = true
        c.metrics.textfile = "/var/lib/prometheus/node-exporter/ariata-agent.prom"
        c.power.enabled = false
        c.power.sysfsPath = "/tmp/power_supply"
        c.power.batteryUploadFactor = 3
        c.power.lowBatteryPercent = 20
        c.power.queueNearLimitPercent = 90
        c.notify.enabled = false
        c.health.bleHeartRateSeconds = 10
        c.health.hrvWindowSeconds = 120
        c.logLevel = "debug"
        c.box.nodeID = String(repeating: "ab", count: 32)
        c.box.relayURL = "https://relay.example.org"
        c.box.directAddresses = ["192.168.1.20:51820"]
        c.box.appletID = "applet-1"
        c.box.deviceID = "box-device-1"
        c.box.pairedAt = "2026-11-28T10:00:00.000Z"
        c.box.key = Secret(String(repeating: "cd", count: 32))
        c.box.silentAudio = .send
        c.box.bridge = "/opt/ariata/ariata-iroh-bridge"
        if arrays {
            c.location.exclude = [PrivacyZone(latitude: 52.52, longitude: 13.405, radius: 200, name: "home", action: .coarsen),
                                  PrivacyZone(latitude: -33.5, longitude: 151.25, radius: 75, microphone: .mute)]
            c.microphone.quiet = [QuietHours(days: Weekdays("mon-fri") ?? .everyDay, from: TimeOfDay("22:00") ?? .midnight,
                                             to: TimeOfDay("07:30") ?? .midnight)]
            c.health.enabled = true
            var serial = SerialSourceSettings(path: "/dev/ttyUSB0", format: .keyvalue, name: "chest")
            serial.baud = 115_200
            var file = FileSourceSettings(path: "/var/log/hr.csv", format: .csv)
            file.backfillDays = 0
            c.health.sources = [.serial(serial), .file(file), .ble(BLESourceSettings(address: "A0:9E:1A:12:34:56", name: "strap", addressType: .random))]
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

    /// The test above would miss a key it does not set: every key the reader knows is
    /// written for `everyKeyChanged`, with a value other than its default.
    func testEveryKeyChangedLeavesNoKeyAtItsDefault() {
        let changed = TOMLKeyLines(ConfigWriter.render(Self.everyKeyChanged())).values
        let defaults = TOMLKeyLines(ConfigWriter.render(AgentConfig())).values
        for key in AgentConfig.keyNames where key != "server.token_file" && key != "box.key_file" {
            guard let values = changed[key] else { XCTFail("\(key) is not written"); continue }
            XCTAssertFalse(values.contains { defaults[key]?.contains($0) ?? false }, "\(key) is at its default")
        }
    }

    /// The shipped file is the one reference of every key: it sets or shows (commented)
    /// every key the reader knows, and no other.
    func testTheReferenceFileShowsEveryKeyTheReaderKnows() throws {
        let reference = TOMLKeyLines(try String(contentsOfFile: Self.examplePath, encoding: .utf8), commentedToo: true)
        let known = Set(AgentConfig.keyNames)
        XCTAssertEqual(known.subtracting(reference.values.keys).sorted(), [], "keys missing from etc/agent.toml")
        XCTAssertEqual(Set(reference.values.keys).subtracting(known).sorted(), [], "keys in etc/agent.toml the reader does not know")
    }

    /// `[location] interval` wins over the server's `update_interval_seconds` only when
    /// the file gives it: a file without it reads as not explicit and is written without it
    /// (so a rewrite by `onboard` does not pin the default); one with it keeps it, even at 10.
    func testTheLocationIntervalIsExplicitOnlyWhenTheFileGivesIt() throws {
        let unset = try AgentConfig(toml: "[location]\nenabled = true\n", file: "a.toml")
        XCTAssertFalse(unset.location.intervalIsExplicit)
        XCTAssertEqual(unset.location.interval, 10)
        XCTAssertFalse(TOMLKeyLines(ConfigWriter.render(unset)).values.keys.contains("location.interval"))
        let set = try AgentConfig(toml: "[location]\ninterval = 10\n", file: "b.toml")
        XCTAssertTrue(set.location.intervalIsExplicit)
        let written = ConfigWriter.render(set)
        XCTAssertEqual(TOMLKeyLines(written).values["location.interval"], ["10"])
        XCTAssertTrue(try AgentConfig(toml: written, file: "c.toml").location.intervalIsExplicit)
        XCTAssertThrowsError(try AgentConfig(toml: "[location]\ninterval = 0\n", file: "d.toml"), "the range still holds")
    }

    /// Turning the metrics file off removes its key from the file being edited.
    func testAnUnsetOptionalIsRemovedFromAnEditedFile() throws {
        let dir = try TemporaryDirectory("config-roundtrip")
        let path = dir.file("agent.toml")
        try "[metrics]\ntextfile = \"/var/lib/node/a.prom\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        var config = try AgentConfig.load(path: path, environment: [:])
        config.metrics.textfile = nil
        try ConfigWriter.write(config, to: path)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "[metrics]\n")
        XCTAssertEqual(try AgentConfig.load(path: path, environment: [:]), config)
    }
}

/// The `key = value` lines of a TOML text by dotted key (`location.exclude.radius`), read
/// line by line so that commented-out examples (`# ca_file = ...`) can count too.
struct TOMLKeyLines {
    private(set) var values: [String: [String]] = [:]

    init(_ text: String, commentedToo: Bool = false) {
        var table = ""
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") {
                guard commentedToo else { continue }
                line = String(line.drop { $0 == "#" }).trimmingCharacters(in: .whitespaces)
            }
            if line.hasPrefix("[") {
                let name = line.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
                // Prose in brackets ("[location] keys") is not a header.
                if name.allSatisfy({ $0.isLetter || $0 == "_" || $0 == "." }) { table = name }
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            guard !key.isEmpty, key.allSatisfy({ $0.isLowercase || $0.isNumber || $0 == "_" }) else { continue }
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            values[table.isEmpty ? key : "\(table).\(key)", default: []].append(value)
        }
    }
}
