import AgentCore
import Foundation
import TestRigs
import XCTest

/// `ariata-agent doctor`: the built binary against real gpsd ports, ALSA's null device and
/// the reference receiver.
final class DoctorCommandTests: XCTestCase {
    func testNothingListeningOnTheGPSDPortFailsWithTheFixCommand() throws {
        let dir = try TemporaryDirectory("doctor-fail")
        let port = try FreePort.find()
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: """
            [location]
            source = "gpsd"
            gpsd_host = "127.0.0.1"
            gpsd_port = \(port)
            [microphone]
            enabled = false
            """)
        let result = try cli.run(["doctor"])
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("FAIL  gpsd at 127.0.0.1:\(port): cannot reach gpsd: connection refused"), result.stdout)
        XCTAssertTrue(result.stdout.contains("fix: sudo apt install gpsd && sudo systemctl enable --now gpsd.socket"), result.stdout)
        XCTAssertTrue(result.stdout.contains("warn  server: not set up"), result.stdout)
        XCTAssertTrue(result.stdout.contains("1 check failed"), result.stdout)

        let json = try cli.run(["doctor", "--json"])
        XCTAssertEqual(json.status, 1)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], json.stdout)
        XCTAssertEqual(object["schema_version"] as? Int, 1)
        XCTAssertEqual(object["ok"] as? Bool, false)
        XCTAssertEqual(object["failed"] as? Int, 1)
        let checks = try XCTUnwrap(object["checks"] as? [[String: Any]])
        let gpsd = try XCTUnwrap(checks.first { $0["stream"] as? String == "location" })
        XCTAssertEqual(gpsd["outcome"] as? String, "failed")
        XCTAssertTrue((gpsd["fix"] as? String)?.contains("gpsd") ?? false)
        for check in checks {
            XCTAssertEqual(Set(check.keys), ["name", "stream", "outcome", "detail", "fix"])
        }
    }

    func testAllWellExitsZeroAndVerifiesTheServer() throws {
        let dir = try TemporaryDirectory("doctor-ok")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: "doc-token")
        defer { receiver.stop() }
        let cli = try AgentCLI.writeConfig(in: dir.path, server: """
            endpoint = "\(receiver.endpoint)"
            token = "doc-token"
            device_id = "doctor-test"
            """, extra: """
            [location]
            enabled = false
            [microphone]
            device = "null"
            """)
        let result = try cli.run(["doctor"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("ok    server \(receiver.endpoint)/ingest: verified"), result.stdout)
        XCTAssertTrue(result.stdout.contains("ok    server: Ariata 0.1.0: pairs devices with the code its web UI shows"), result.stdout)
        XCTAssertTrue(result.stdout.contains("ok    ALSA capture device \"null\": opens for 16 kHz mono capture"), result.stdout)
        XCTAssertTrue(result.stdout.contains("disabled in the config, not checked: location, health"), result.stdout)
        XCTAssertFalse(result.stdout.contains("gpsd"), "a disabled stream is not checked")
        XCTAssertTrue(result.stdout.contains("all checks passed"), result.stdout)
        XCTAssertFalse((result.stdout + result.stderr).contains("doc-token"))
        XCTAssertEqual(try receiver.requests().first?.records, 0, "an empty batch, nothing stored")

        // The token revoked on the server: doctor says E002 and fails.
        try receiver.configure(token: "rotated")
        let revoked = try cli.run(["doctor"])
        XCTAssertEqual(revoked.status, 1, revoked.stdout)
        XCTAssertTrue(revoked.stdout.contains("FAIL  server \(receiver.endpoint)/ingest: E002"), revoked.stdout)
    }

    /// With a real gpsd answering, the location check passes and names gpsd's release.
    func testARealGPSDPasses() throws {
        let gpsd = try GPSDRig()
        let dir = try TemporaryDirectory("doctor-gpsd")
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: """
            [location]
            source = "gpsd"
            gpsd_host = "127.0.0.1"
            gpsd_port = \(gpsd.port)
            [microphone]
            enabled = false
            """)
        let result = try cli.run(["doctor"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("ok    gpsd at 127.0.0.1:\(gpsd.port): gpsd 3."), result.stdout)
    }

    /// A capture device that does not exist fails with the fix, and alsa-lib's own
    /// diagnostics are folded into the check instead of spilling onto the terminal.
    func testAMissingCaptureDeviceFailsWithoutALSANoise() throws {
        let dir = try TemporaryDirectory("doctor-alsa")
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: """
            [location]
            enabled = false
            [microphone]
            device = "hw:CARD=NoSuchCard"
            """)
        let result = try cli.run(["doctor"])
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("FAIL  ALSA capture device \"hw:CARD=NoSuchCard\": cannot open it"), result.stdout)
        XCTAssertTrue(result.stdout.contains("fix: list capture devices with 'arecord -L'"), result.stdout)
        XCTAssertFalse(result.stderr.contains("ALSA lib"), result.stderr)
    }

    /// A Bluetooth LE source is checked as the source connects (python-dbusmock's bluez5 on
    /// a private system bus): a worn strap passes with its heart rate and battery; a strap
    /// BlueZ cannot find fails with what to do.
    func testABLESensorIsCheckedByConnectingToIt() throws {
        let dir = try TemporaryDirectory("doctor-ble")
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus)
        try sensor.wear(sensor.sensorAddress)
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: AgentCLI.healthOnly(source: """
            kind = "ble"
            address = "\(sensor.sensorAddress)"
            """))
        let worn = try cli.run(["doctor"], environment: bus.environment)
        XCTAssertEqual(worn.status, 0, worn.stdout + worn.stderr)
        XCTAssertTrue(worn.stdout.contains("ok    health ble \(sensor.sensorAddress): notifies: 72 bpm, with beat intervals (HRV), battery 84 %"),
                      worn.stdout)
        XCTAssertFalse(try sensor.isConnected(), "doctor lets the sensor go again")

        let away = "C0:FF:EE:00:00:01"
        let absent = try AgentCLI.writeConfig(in: dir.path, extra: AgentCLI.healthOnly(source: """
            kind = "ble"
            address = "\(away)"
            """))
        let result = try absent.run(["doctor"], environment: bus.environment)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("FAIL  health ble \(away): heart-rate sensor \(away) not found nearby"), result.stdout)
        XCTAssertTrue(result.stdout.contains("fix: wear the sensor (wet a strap's electrodes, put it on)"), result.stdout)
    }

    func testABrokenConfigFailsAndSaysWhichKey() throws {
        let dir = try TemporaryDirectory("doctor-broken")
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: "[location]\ninterval = \"ten\"")
        let result = try cli.run(["doctor"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("FAIL  configuration \(cli.configPath)"), result.stdout)
        XCTAssertTrue(result.stdout.contains("location.interval"), result.stdout)
    }

    /// The serial check opens the port the way the serial source does (raw, at the
    /// configured baud): a real socat pty passes, an impossible speed and a missing device
    /// say why.
    func testASerialHealthSourceIsCheckedAsTheStreamOpensIt() throws {
        let dir = try TemporaryDirectory("doctor-serial")
        let pty = try PtyRig(directory: dir.path)
        try pty.plug()
        defer { pty.unplug() }
        func doctor(path: String, baud: Int) throws -> AgentCLI.Result {
            let cli = try AgentCLI.writeConfig(in: dir.path, extra: AgentCLI.healthOnly(source: """
                kind = "serial"
                path = "\(path)"
                format = "keyvalue"
                baud = \(baud)
                """))
            return try cli.run(["doctor"])
        }
        let good = try doctor(path: pty.a, baud: 115_200)
        XCTAssertTrue(good.stdout.contains("ok    health serial \(pty.a): opens at 115200 baud"), good.stdout)
        let missing = try doctor(path: dir.file("ttyNONE"), baud: 9_600)
        XCTAssertTrue(missing.stdout.contains("no such device (unplugged? it is reopened when it appears)"), missing.stdout)
    }

    /// On a laptop (a battery in `[power] sysfs_path`) doctor says how a metered network
    /// is treated and how to mark a phone's hotspot NetworkManager cannot tell; on a
    /// machine without a battery it says nothing of it.
    func testOnALaptopItSaysHowToMarkAHotspot() throws {
        let dir = try TemporaryDirectory("doctor-laptop")
        let power = FakePowerSupply(path: dir.file("power_supply"))
        try power.laptop(onMains: false, battery: 60)
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: """
            [upload]
            metered_networks = ["Ana's iPhone"]
            [power]
            sysfs_path = "\(power.path)"
            [location]
            enabled = false
            [microphone]
            device = "null"
            """)
        let laptop = try cli.run(["doctor"])
        XCTAssertTrue(laptop.stdout.contains("ok    metered networks: a laptop: on a metered network audio waits for an unmetered one"),
                      laptop.stdout)
        XCTAssertTrue(laptop.stdout.contains("mark one with 'nmcli connection modify <name> connection.metered yes', or add its name or SSID to [upload] metered_networks; counted as metered now: Ana's iPhone"),
                      laptop.stdout)

        let desktop = FakePowerSupply(path: dir.file("desktop_supply"))
        try desktop.set("AC", ["type": "Mains", "online": "1"])
        let other = try AgentCLI.writeConfig(in: dir.path, extra: """
            [power]
            sysfs_path = "\(desktop.path)"
            [location]
            enabled = false
            [microphone]
            device = "null"
            """)
        let result = try other.run(["doctor"])
        XCTAssertTrue(result.stdout.contains("free disk"), result.stdout)
        XCTAssertFalse(result.stdout.contains("metered networks"), result.stdout)
    }
}
