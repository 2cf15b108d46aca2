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
        config.health.sources = [.serial(SerialSourceSettings(path: "/dev/ttyUSB0", format: .keyvalue)),
                                 .file(FileSourceSettings(path: "/var/log/hr.csv", format: .csv, name: "watch"))]
        let path = dir.file("etc/agent.toml")
        config.file = path
        try ConfigWriter.write(config, to: path)

        let back = try AgentConfig.load(path: path, environment: [:])
        XCTAssertEqual(back, config)
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)
        XCTAssertEqual(mode.intValue & 0o777, 0o600)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.file("etc")), ["agent.toml"])
    }

    /// Editing a file changes the lines of the keys that change and nothing else.
    func testEditsKeepEveryOtherLine() throws {
        let text = """
            # my setup
            [server]
              endpoint = "https://old.example.org"   # the old one
            # ca_file = "/etc/ariata/ca.pem"
            gzip = true

            [storage]
            # kept
            database = "/data/q.sqlite"
            """
        let edits = [
            ConfigEditor.Edit("server", "endpoint", ConfigEditor.render("https://new.example.org")),
            ConfigEditor.Edit("server", "ca_file", ConfigEditor.render("/etc/ssl/mine.pem")),
            ConfigEditor.Edit("server", "gzip", nil),
            ConfigEditor.Edit("storage", "retention_days", ConfigEditor.render(7)),
            ConfigEditor.Edit("location", "enabled", ConfigEditor.render(false)),
        ]
        let edited = ConfigEditor.apply(edits, to: text)
        XCTAssertEqual(edited, """
            # my setup
            [server]
              endpoint = 'https://new.example.org'
            # ca_file = "/etc/ariata/ca.pem"
            ca_file = '/etc/ssl/mine.pem'

            [storage]
            # kept
            database = "/data/q.sqlite"
            retention_days = 7

            [location]
            enabled = false
            """)
        let config = try AgentConfig(toml: edited, file: "t.toml")
        XCTAssertEqual(config.server.endpoint, "https://new.example.org")
        XCTAssertEqual(config.server.caFile, "/etc/ssl/mine.pem")
        XCTAssertFalse(config.server.gzip)
        XCTAssertEqual(config.storage.retentionDays, 7)
        XCTAssertFalse(config.location.enabled)
        // A file that ends with a newline keeps it; nothing to change changes nothing.
        XCTAssertEqual(ConfigEditor.apply([], to: text + "\n"), text + "\n")
    }

    /// A health source added (onboard's Bluetooth sensor) is appended as a
    /// `[[health.source]]` table, health switched on in place: every comment stays.
    func testAnAddedHealthSourceIsAppendedAndTheCommentsStay() throws {
        let dir = try TemporaryDirectory("config-append")
        let path = dir.file("agent.toml")
        let text = """
            # my setup
            [storage]
            # kept
            database = "\(dir.file("q.sqlite"))"
            """
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        var config = try AgentConfig.load(path: path, environment: [:])
        config.health.enabled = true
        config.health.sources.append(.ble(BLESourceSettings(address: "A0:9E:1A:12:34:56", name: "Polar H10 12345678")))
        try ConfigWriter.write(config, to: path)
        let written = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(written.hasPrefix(text + "\n"), written)
        XCTAssertTrue(written.contains("[health]\nenabled = true\n"), written)
        XCTAssertTrue(written.contains("\n[[health.source]]\n"), written)
        let back = try AgentConfig.load(path: path, environment: [:])
        XCTAssertEqual(back.health.sources.first, .ble(BLESourceSettings(address: "A0:9E:1A:12:34:56", name: "Polar H10 12345678")))
        XCTAssertEqual(back.health.sources.first?.name, "Polar H10 12345678")

        // A source replaced (not appended) renders the file anew: still the same configuration.
        config.health.sources[0].name = "strap"
        try ConfigWriter.write(config, to: path)
        XCTAssertEqual(try AgentConfig.load(path: path, environment: [:]).health.sources.first?.name, "strap")
    }

    /// Writing over an existing file edits it: an unchanged configuration leaves it byte
    /// for byte; a changed key changes its line only.
    func testWritingOverAFileEditsItInPlace() throws {
        let dir = try TemporaryDirectory("config-edit")
        let path = dir.file("agent.toml")
        let original = "# mine\n[server]\nendpoint = \"https://a.example.org\"\n\n[upload]\ninterval = 60 # often\n"
        try original.write(toFile: path, atomically: true, encoding: .utf8)
        var config = try AgentConfig.load(path: path, environment: [:])
        try ConfigWriter.write(config, to: path)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), original)
        config.server.deviceName = "desk"
        try ConfigWriter.write(config, to: path)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8),
                       "# mine\n[server]\nendpoint = \"https://a.example.org\"\ndevice_name = 'desk'\n\n[upload]\ninterval = 60 # often\n")
    }
}
