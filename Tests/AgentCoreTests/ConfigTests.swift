import AgentCore
import Foundation
import TestRigs
import XCTest

final class ConfigTests: XCTestCase {
    /// The repository's example file.
    var examplePath: String { Repository.path("etc/agent.toml") }

    func testExampleFileParsesToTheDefaults() throws {
        let config = try AgentConfig.load(path: examplePath, environment: [:])
        var expected = AgentConfig()
        expected.file = examplePath
        XCTAssertEqual(config, expected, "etc/agent.toml must show every default")
        XCTAssertEqual(config.upload.interval, 300)
        XCTAssertEqual(config.storage.database, "/var/lib/ariata/agent.sqlite")
        XCTAssertEqual(config.microphone.chunkSeconds, 30)
        XCTAssertEqual(config.microphone.overlapSeconds, 2)
        XCTAssertEqual(config.location.interval, 10)
        XCTAssertEqual(config.location.source, .auto)
        XCTAssertEqual(config.location.accuracyLevel, .exact)
        XCTAssertEqual(config.upload.onMetered, .small, "location and health go on a metered connection; audio waits")
        XCTAssertNil(config.notify.enabled, "decided by the service: on for the user service")
        XCTAssertFalse(config.server.isOnboarded)
    }

    func testAFullConfigIsRead() throws {
        let dir = try TemporaryDirectory("config")
        try "  s3cret-from-file\n".write(toFile: dir.file("token"), atomically: true, encoding: .utf8)
        let config = try AgentConfig(toml: """
            [server]
            endpoint = "https://ariata.example.org/"
            ingest_path = "api/ingest"
            token_file = "\(dir.file("token"))"
            device_id = "d-1"
            gzip = true
            [storage]
            database = "/tmp/x.sqlite"
            min_free_mb = 5
            [upload]
            interval = 60
            on_metered = "none"
            [location]
            enabled = false
            [microphone]
            chunk_seconds = 20
            overlap_seconds = 3
            [health]
            enabled = true
            [[health.source]]
            kind = "serial"
            path = "/dev/ttyUSB0"
            baud = 115200
            format = "keyvalue"
            [[health.source]]
            path = "/var/log/hr.csv"
            format = "csv"
            name = "watch"
            [log]
            level = "debug"
            """, file: "test.toml")
        XCTAssertEqual(config.server.ingestURL, "https://ariata.example.org/api/ingest")
        XCTAssertEqual(config.server.token.value, "s3cret-from-file")
        XCTAssertTrue(config.server.isOnboarded)
        XCTAssertTrue(config.server.gzip)
        XCTAssertEqual(config.storage.retention.minFreeBytes, 5 * 1_048_576)
        XCTAssertEqual(config.upload.interval, 60)
        XCTAssertEqual(config.upload.onMetered, OnMetered.none)
        XCTAssertFalse(config.location.enabled)
        XCTAssertEqual(config.microphone.overlapSeconds, 3)
        XCTAssertEqual(config.health.sources.count, 2)
        XCTAssertEqual(config.health.sources[0].kind, .serial)
        guard case .serial(let serial) = config.health.sources[0] else { return XCTFail("not a serial source") }
        XCTAssertEqual(serial.baud, 115_200)
        XCTAssertEqual(config.health.sources[1].name, "watch")
        XCTAssertEqual(config.health.sources[1].kind, .file)
        XCTAssertEqual(config.logLevel, "debug")
    }

    func testEachKindOfBadInputNamesFileKeyAndWhatIsAllowed() {
        let cases: [(toml: String, key: String?, fragment: String)] = [
            ("[location]\ninterval = \"ten\"", "location.interval", "expected a whole number from 1 to 3600 seconds"),
            ("[location]\ninterval = 0", "location.interval", "out of range: allowed 1 to 3600"),
            ("[location]\nintervall = 5", "location.intervall", "unknown key; keys allowed here: accuracy_level, distance_threshold, enabled, exclude, geoclue_fix_interval, geoclue_mode, gpsd_host, gpsd_port, interval, max_accuracy, min_distance, source, stationary_interval"),
            ("[location]\nmax_accuracy = -1", "location.max_accuracy", "-1 is out of range: allowed 0 to 10000000 metres"),
            ("[location]\nstationary_interval = 0", "location.stationary_interval", "0 is out of range: allowed 1 to 86400 seconds"),
            ("[location]\ngeoclue_mode = \"sometimes\"", "location.geoclue_mode", "auto"),
            ("[location]\ngeoclue_fix_interval = 10", "location.geoclue_fix_interval", "10 is out of range: allowed 30 to 86400 seconds"),
            ("[location]\nmin_distance = 2.5", "location.min_distance", "expected a whole number from 0 to 100000 metres"),
            ("[locaton]\nenabled = true", "locaton", "unknown key"),
            ("[server]\nendpoint = \"ftp://x\"", "server.endpoint", "not an http:// or https:// URL"),
            ("[server]\ngzip = \"yes\"", "server.gzip", "expected true or false"),
            ("[microphone]\noverlap_seconds = 30", "microphone.overlap_seconds", "must be shorter than chunk_seconds"),
            ("[microphone]\ncomplexity = 11", "microphone.complexity", "11 is out of range: allowed 0 to 10"),
            ("[microphone]\njournal_sync_seconds = 0", "microphone.journal_sync_seconds", "0 is out of range: allowed 1 to 60"),
            ("[microphone]\nsilence_threshold_db = 10", "microphone.silence_threshold_db", "10 is out of range: allowed -100 to 0 dBFS (0 is full scale, -50 quiet)"),
            ("[microphone]\nsilence_threshold_db = -50.5", "microphone.silence_threshold_db", "expected a whole number from -100 to 0 dBFS"),
            ("[microphone]\nupload_silent = \"no\"", "microphone.upload_silent", "expected true or false"),
            ("[microphone]\nquiet_bitrate = 20000", "microphone.quiet_bitrate", "20000 must not be above bitrate (16000)"),
            ("[microphone]\nquiet_bitrate = 1000", "microphone.quiet_bitrate", "1000 is out of range: allowed 2000 to 128000"),
            ("[microphone]\nsound_threshold_db = 3", "microphone.sound_threshold_db", "3 is out of range: allowed -100 to 0 dBFS"),
            ("[microphone]\nsound_margin_db = 50", "microphone.sound_margin_db", "50 is out of range: allowed 0 to 40 dB above the room's noise floor"),
            ("[health]\nenabled = true", "health.source", "no [[health.source]] is configured"),
            ("[[health.source]]\nkind = \"usb\"\npath = \"/x\"", "health.source[1].kind", "use one of \"file\", \"serial\""),
            ("[location]\nsource = \"wifi\"", "location.source", "use one of \"auto\", \"gpsd\", \"geoclue\""),
            ("[location]\naccuracy_level = \"metre\"", "location.accuracy_level", "use one of \"city\", \"neighborhood\", \"street\", \"exact\""),
            ("[[health.source]]\nformat = \"csv\"", "health.source[1].path", "missing"),
            ("[[health.source]]\nkind = \"ble\"", "health.source[1].address", "give the sensor's address"),
            ("[[health.source]]\nkind = \"ble\"\naddress = \"A0:9E:1A:12:34\"", "health.source[1].address", "is not a Bluetooth address"),
            ("[[health.source]]\nkind = \"ble\"\naddress = \"A0:9E:1A:12:34:5G\"", "health.source[1].address", "six hex pairs"),
            ("[[health.source]]\nkind = \"ble\"\npath = \"/dev/rfcomm0\"\nname = \"x\"", "health.source[1].path", "has no path"),
            ("[[health.source]]\npath = \"/x\"\naddress = \"A0:9E:1A:12:34:56\"", "health.source[1].address", "only a kind = \"ble\" source"),
            ("[health]\nhrv_window_seconds = 5", "health.hrv_window_seconds", "5 is out of range: allowed 10 to 3600"),
            ("[health]\nble_heart_rate_seconds = 0", "health.ble_heart_rate_seconds", "0 is out of range"),
            ("[log]\nlevel = \"loud\"", "log.level", "is not allowed"),
            ("[upload]\non_metered = \"some\"", "upload.on_metered", "\"some\" is not allowed: use one of \"all\", \"small\", \"none\""),
            ("[upload]\nmetered_networks = [\" \"]", "upload.metered_networks",
             "an empty name: give a connection's name ('nmcli connection show') or a Wi-Fi network's SSID"),
            ("[notify]\nenabled = 1", "notify.enabled", "expected true or false, got the number 1"),
            ("location = 5", "location", "expected a table"),
            ("[server\nendpoint = 1", nil, "line 1"),
            ("[server]\nconnect_timeout = 1.5", "server.connect_timeout", "got the number 1.5"),
            ("[daemon]\nhealth_interval = 0", "daemon.health_interval", "0 is out of range: allowed 1 to 60 seconds"),
            ("[daemon]\nhealth_interval = 10\ncheck_interval = 20", "daemon.health_interval",
             "health_interval is the former name of check_interval, which is also given: keep only check_interval"),
            ("[daemon]\ncheck_intervall = 5", "daemon.check_intervall", "unknown key; keys allowed here: check_interval, trust_system_clock"),
        ]
        for c in cases {
            XCTAssertThrowsError(try AgentConfig(toml: c.toml, file: "/etc/ariata/agent.toml"), c.toml) { error in
                guard let e = error as? ConfigError else { return XCTFail("\(error) is not a ConfigError") }
                XCTAssertEqual(e.file, "/etc/ariata/agent.toml")
                XCTAssertEqual(e.key, c.key, c.toml)
                XCTAssertTrue(e.description.contains(c.fragment), "\(e.description) lacks \(c.fragment)")
                XCTAssertTrue(e.description.hasPrefix("/etc/ariata/agent.toml: "), e.description)
            }
        }
    }

    /// A source reads its kind's keys; another kind's key, as earlier versions wrote for
    /// every source (`format`, `baud`, `backfill_days` under a sensor), is checked as its
    /// kind checks it and ignored; the writer writes only the kind's own.
    func testAnotherKindsKeyIsCheckedThenIgnoredAndNotWritten() throws {
        let earlier = """
            [[health.source]]
            kind = "ble"
            format = "jsonl"
            baud = 9600
            name = "strap"
            backfill_days = 7
            address = "A0:9E:1A:12:34:56"
            [[health.source]]
            path = "/var/log/hr.jsonl"
            baud = 9600
            """
        let config = try AgentConfig(toml: earlier, file: "a.toml")
        XCTAssertEqual(config.health.sources, [.ble(BLESourceSettings(address: "A0:9E:1A:12:34:56", name: "strap")),
                                               .file(FileSourceSettings(path: "/var/log/hr.jsonl"))])
        let written = TOMLKeyLines(ConfigWriter.render(config)).values
        XCTAssertEqual(written["health.source.kind"], ["'ble'", "'file'"])
        XCTAssertNil(written["health.source.baud"], "neither is a serial port")
        XCTAssertEqual(written["health.source.format"], ["'jsonl'"], "the file's only")
        XCTAssertEqual(written["health.source.backfill_days"], ["7"], "the file's only")
        XCTAssertThrowsError(try AgentConfig(toml: "[[health.source]]\nkind = \"ble\"\nname = \"strap\"\nbaud = 10", file: "b.toml")) {
            XCTAssertEqual(($0 as? ConfigError)?.key, "health.source[1].baud")
        }
    }

    /// A Bluetooth LE source: by address (upper-cased, named after it when no name is
    /// given) or by the name it advertises.
    func testBluetoothSources() throws {
        let config = try AgentConfig(toml: """
            [health]
            enabled = true
            ble_heart_rate_seconds = 10
            [[health.source]]
            kind = "ble"
            address = "a0:9e:1a:12:34:56"
            [[health.source]]
            kind = "ble"
            name = "Polar H10 12345678"
            """, file: "a.toml")
        XCTAssertEqual(config.health.bleHeartRateSeconds, 10)
        XCTAssertEqual(config.health.hrvWindowSeconds, 300)
        XCTAssertEqual(config.health.sources, [.ble(BLESourceSettings(address: "A0:9E:1A:12:34:56", name: "ble:A0:9E:1A:12:34:56")),
                                               .ble(BLESourceSettings(address: nil, name: "Polar H10 12345678"))])
    }

    /// `[daemon] health_interval`, the name of `check_interval` before the maintenance rounds
    /// were told apart from health samples, is still read; a rewrite writes the new name.
    func testTheFormerNameOfCheckIntervalIsStillRead() throws {
        let config = try AgentConfig(toml: "[daemon]\nhealth_interval = 12", file: "a.toml")
        XCTAssertEqual(config.daemon.checkInterval, 12)
        XCTAssertEqual(try AgentConfig(toml: "[daemon]\ncheck_interval = 13", file: "a.toml").daemon.checkInterval, 13)
        let written = ConfigWriter.render(config)
        XCTAssertTrue(written.contains("check_interval = 12"), written)
        XCTAssertFalse(written.contains("health_interval"), written)
        XCTAssertEqual(try AgentConfig(toml: written, file: "a.toml"), config)

        // Edited in place (onboard), a file that still says health_interval gets the new
        // name on that line, its comment kept, and never both names.
        let existing = "[daemon]\n# seconds between checks\nhealth_interval = 12\n"
        var changed = try AgentConfig(toml: existing, file: "a.toml")
        changed.daemon.checkInterval = 20
        let edited = ConfigWriter.text(for: changed, editing: existing, path: "a.toml")
        XCTAssertEqual(edited, "[daemon]\n# seconds between checks\ncheck_interval = 20\n")
        XCTAssertEqual(try AgentConfig(toml: edited, file: "a.toml").daemon.checkInterval, 20)
    }

    func testMissingFileUnreadableTokenFileAndEnvironmentOverrides() throws {
        XCTAssertThrowsError(try AgentConfig.load(path: "/nonexistent/agent.toml", environment: [:])) { error in
            XCTAssertTrue("\(error)".contains("run 'ariata-agent onboard'"), "\(error)")
        }
        let defaults = try AgentConfig.load(path: "/nonexistent/agent.toml", missingOK: true,
                                            environment: ["ARIATA_ENDPOINT": "http://127.0.0.1:9", "ARIATA_TOKEN": "tok",
                                                          "ARIATA_DATABASE": "/tmp/q.sqlite"])
        XCTAssertEqual(defaults.server.endpoint, "http://127.0.0.1:9")
        XCTAssertEqual(defaults.server.token.value, "tok")
        XCTAssertEqual(defaults.storage.database, "/tmp/q.sqlite")

        XCTAssertThrowsError(try AgentConfig(toml: "[server]\ntoken_file = \"/nonexistent/token\"", file: "a.toml")) { error in
            XCTAssertEqual((error as? ConfigError)?.key, "server.token_file")
        }
    }

    func testTheTokenNeverAppearsInDescriptions() throws {
        let config = try AgentConfig(toml: "[server]\nendpoint = \"http://h\"\ntoken = \"TOPSECRET\"", file: "a.toml")
        XCTAssertEqual(config.server.token.value, "TOPSECRET")
        XCTAssertFalse("\(config)".contains("TOPSECRET"))
        XCTAssertFalse(String(reflecting: config).contains("TOPSECRET"))
        XCTAssertTrue("\(config.server.token)".contains("redacted"))
    }

    /// `fallback_device`: "default" unless turned off ("" or "none", any case), and never
    /// the chosen device itself.
    func testTheMicrophoneFallbackIsOffForEmptyNoneOrTheChosenDevice() throws {
        func fallback(_ toml: String) throws -> String? {
            try AgentConfig(toml: "[microphone]\n" + toml, file: "test.toml").microphone.fallback
        }
        XCTAssertEqual(try fallback("device = \"plughw:CARD=Mic\""), "default")
        XCTAssertEqual(try fallback("device = \"plughw:CARD=Mic\"\nfallback_device = \"hw:0\""), "hw:0")
        XCTAssertNil(try fallback("fallback_device = \"\""))
        XCTAssertNil(try fallback("fallback_device = \"None\""))
        XCTAssertNil(try fallback("device = \"hw:0\"\nfallback_device = \"hw:0\""))
        XCTAssertNil(try fallback(""), "device = \"default\" needs no fallback to itself")
    }
}
