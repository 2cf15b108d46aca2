import AgentCore
import Foundation
import TestRigs
import XCTest

/// `ariata-agent onboard` setting up a Bluetooth LE heart-rate sensor: the built binary,
/// the reference receiver on 127.0.0.1, and python-dbusmock's bluez5 on a private system
/// bus (a real dbus-daemon) with heart-rate sensors added as BlueZ adds what it hears.
final class OnboardBLESensorTests: XCTestCase {
    static let token = "ble-token-5c1e"
    static let tickr = "C0:FF:EE:12:34:56"
    static let tickrName = "Wahoo TICKR 1A2B"
    /// The address the TICKR is known by once bonded (it advertises from a private one).
    static let tickrIdentity = "D4:CA:6E:00:11:22"

    /// Location off, the null microphone, and `health` as given.
    func seedConfig(_ dir: TemporaryDirectory, health: String = "") throws -> AgentCLI {
        try AgentCLI.writeConfig(in: dir.path, extra: """
            [location]
            enabled = false
            [microphone]
            device = "null"
            \(health)
            """)
    }

    /// On a terminal with health on: the scan is offered, two straps heard during it are
    /// listed strongest first with name, address and dBm; the weaker one, which refuses
    /// notifications until bonded, is chosen, paired, checked and written beside the file
    /// source already there, under the identity address BlueZ has for it after pairing.
    func testOnATerminalTheChosenSensorIsListedPairedCheckedAndWritten() throws {
        let dir = try TemporaryDirectory("onboard-ble")
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus, knownToBlueZ: false)
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token)
        defer { receiver.stop() }
        let heartFile = dir.file("hr.jsonl")
        try Data().write(to: URL(fileURLWithPath: heartFile))
        let cli = try seedConfig(dir, health: """
            [health]
            enabled = true
            [[health.source]]
            kind = "file"
            path = "\(heartFile)"
            format = "jsonl"
            """)
        // BlueZ adds a device when it first hears it: both straps appear during the scan.
        let heard = Background { [sensor] in
            try waitUntil("a discovery", timeout: 60) { try !sensor.adapterCalls(of: "StartDiscovery").isEmpty }
            try sensor.addSensor()
            try sensor.addSensor(address: Self.tickr, name: Self.tickrName, rssi: -71, requiresPairing: true,
                                 identityAddress: Self.tickrIdentity)
            try sensor.wear(Self.tickr)
        }
        let binary = try BuildProducts.executable("ariata-agent")
        let outcome = try PexpectRig.run(command: [binary, "onboard", "--config", cli.configPath, "--endpoint", receiver.endpoint,
                                                   "--token", Self.token, "--ble-scan-seconds", "3"], script: """
            expect("Microphone (a number from the list, or an ALSA device name) [null]: ")
            child.sendline("")
            expect("Scan for a Bluetooth heart-rate sensor? [y/N]: ")
            child.sendline("y")
            expect("Scanning for Bluetooth LE heart-rate sensors for 3 s")
            child.expect(r"\\n +1 +\(sensor.sensorName) +\(sensor.sensorAddress) +-58 dBm\\r?\\n")
            child.expect(r" +2 +\(Self.tickrName) +\(Self.tickr) +-71 dBm\\r?\\n")
            expect("Heart-rate sensor (a number from the list, or none) [none]: ")
            child.sendline("3")
            expect("there is no sensor 3: give a number from 1 to 2, or none")
            expect("Heart-rate sensor (a number from the list, or none) [none]: ")
            child.sendline("2")
            expect("connecting to \(Self.tickrName) (\(Self.tickr)) and waiting for a heart rate")
            expect("\(Self.tickr) refuses notifications until it is paired: pairing")
            expect("paired with \(Self.tickr), known from now on as \(Self.tickrIdentity)")
            expect("ok    heart-rate sensor \(Self.tickrName) (\(Self.tickr)): notifies: 72 bpm, with beat intervals (HRV)")
            expect('health source: kind = "ble", address = "\(Self.tickrIdentity)", name = "\(Self.tickrName)", address_type = "public"')
            expect("Device name (how the server lists it) [")
            child.sendline("chest-box")
            expect("Import the last 7 days of \(heartFile) now? [Y/n]: ")
            child.sendline("n")
            expect("Done.")
            finish()
            """, directory: dir.path, environment: bus.environment.mapValues { $0 }.merging(["TERM": "xterm", "NO_COLOR": "1"]) { $1 })
        try heard.join()
        XCTAssertEqual(outcome.status, 0, outcome.log + "\n" + outcome.transcript)

        let filter = try XCTUnwrap(sensor.adapterCalls(of: "SetDiscoveryFilter").first?.first as? [String: Any])
        XCTAssertEqual((filter["Transport"] as? [String: Any])?["data"] as? String, "le")
        XCTAssertEqual((filter["UUIDs"] as? [String: Any])?["data"] as? [String], [BlueZMockRig.heartRateService])
        XCTAssertFalse(try sensor.adapterCalls(of: "StopDiscovery").isEmpty, "the discovery is stopped again")
        XCTAssertEqual(try sensor.pairCalls(Self.tickr), 1)
        XCTAssertTrue(try sensor.isPaired(Self.tickr))
        XCTAssertEqual(try sensor.pairCalls(sensor.sensorAddress), 0, "the strap not chosen is left alone")
        XCTAssertEqual(try sensor.connectCalls(), 0, "the strap not chosen is left alone")

        let written = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertTrue(written.health.enabled)
        XCTAssertEqual(written.health.sources.map(\.kind), [.file, .ble])
        XCTAssertEqual(written.health.sources.first.flatMap { if case .file(let file) = $0 { file.path } else { nil } }, heartFile)
        XCTAssertEqual(written.health.sources.last,
                       .ble(BLESourceSettings(address: Self.tickrIdentity, name: Self.tickrName, addressType: .public)))
        let text = try String(contentsOfFile: cli.configPath, encoding: .utf8)
        XCTAssertTrue(text.contains("path = \"\(heartFile)\""), "the file's own lines stay as they were: the sensor is appended\n\(text)")
    }

    /// Scripted: --ble-sensor ADDRESS --yes connects without a scan, needs no pairing for a
    /// strap that notifies unpaired, takes the advertised name, and switches health on.
    /// --yes alone never scans; a malformed address is refused before anything runs.
    func testScriptedTheAddressGivenIsCheckedAndWrittenAndYesAloneNeverScans() throws {
        let dir = try TemporaryDirectory("onboard-ble-yes")
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus)
        try sensor.wear(sensor.sensorAddress)
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token)
        defer { receiver.stop() }
        let cli = try seedConfig(dir)
        let base = ["onboard", "--endpoint", receiver.endpoint, "--token", Self.token, "--device-name", "box", "--yes"]

        let chosen = try cli.run(base + ["--ble-sensor", sensor.sensorAddress.lowercased()], environment: bus.environment)
        XCTAssertEqual(chosen.status, 0, chosen.stdout + chosen.stderr)
        XCTAssertTrue(chosen.stdout.contains("heart-rate sensor \(sensor.sensorAddress) (--ble-sensor)"), chosen.stdout)
        XCTAssertTrue(chosen.stdout.contains("ok    heart-rate sensor \(sensor.sensorAddress): notifies: 72 bpm, with beat intervals (HRV), battery 84 %"),
                      chosen.stdout)
        XCTAssertTrue(chosen.stdout.contains("health switched on ([health] enabled = true)"), chosen.stdout)
        XCTAssertEqual(try sensor.pairCalls(sensor.sensorAddress), 0, "a strap that notifies unpaired is not bonded")
        XCTAssertFalse(try sensor.isNotifying(), "let go after the check")
        XCTAssertTrue(try sensor.adapterCalls(of: "StartDiscovery").isEmpty, "a sensor BlueZ knows needs no scan")
        let written = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertTrue(written.health.enabled)
        XCTAssertEqual(written.health.sources.count, 1)
        XCTAssertEqual(written.health.sources.first,
                       .ble(BLESourceSettings(address: sensor.sensorAddress, name: sensor.sensorName, addressType: .public)))

        // Again with --yes alone: the configured sensor is checked with the others, no scan,
        // and the source stays one.
        let again = try cli.run(base, environment: bus.environment)
        XCTAssertEqual(again.status, 0, again.stdout + again.stderr)
        XCTAssertTrue(again.stdout.contains("ok    health ble \(sensor.sensorAddress): notifies: 72 bpm"), again.stdout)
        XCTAssertFalse(again.stdout.contains("Scanning"), again.stdout)
        XCTAssertTrue(try sensor.adapterCalls(of: "StartDiscovery").isEmpty, "--yes never scans by itself")
        XCTAssertEqual(try AgentConfig.load(path: cli.configPath, environment: [:]).health.sources.count, 1)

        let malformed = try cli.run(base + ["--ble-sensor", "A0:9E:1A:12:34"], environment: bus.environment)
        XCTAssertEqual(malformed.status, 64, malformed.stdout + malformed.stderr)
        XCTAssertTrue(malformed.stderr.contains("--ble-sensor: A0:9E:1A:12:34 is not a Bluetooth address"), malformed.stderr)
    }

    /// A scan that hears nothing says to wake the strap and writes no source; a powered-off
    /// adapter is named and left off; without bluetoothd onboard says to start it.
    func testAScanThatCannotFindASensorSaysWhatToDo() throws {
        let dir = try TemporaryDirectory("onboard-ble-none")
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus, knownToBlueZ: false)
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token)
        defer { receiver.stop() }
        let cli = try seedConfig(dir)
        let scan = ["onboard", "--endpoint", receiver.endpoint, "--token", Self.token, "--device-name", "box", "--yes",
                    "--ble-scan", "--ble-scan-seconds", "1"]

        let nothing = try cli.run(scan, environment: bus.environment)
        XCTAssertEqual(nothing.status, 0, nothing.stdout + nothing.stderr)
        XCTAssertTrue(nothing.stdout.contains("no heart-rate sensor heard in 1 s: wake the strap (wet its electrodes and put it on)"), nothing.stdout)
        XCTAssertFalse(try sensor.adapterCalls(of: "StartDiscovery").isEmpty)
        XCTAssertFalse(try AgentConfig.load(path: cli.configPath, environment: [:]).health.enabled)

        try sensor.setPowered(false)
        let off = try cli.run(scan, environment: bus.environment)
        XCTAssertEqual(off.status, 0, off.stdout + off.stderr)
        XCTAssertTrue(off.stdout.contains("cannot scan: Bluetooth adapter hci0 is powered off: turn it on with 'bluetoothctl power on'"), off.stdout)
        let powered = try sensor.mock.call("Get", "ss", ["org.bluez.Adapter1", "Powered"], interface: "org.freedesktop.DBus.Properties",
                                           object: sensor.adapterPath)
        XCTAssertEqual((powered.first as? [String: Any])?["data"] as? Bool, false, "onboard does not power the adapter on")

        sensor.stop()
        let absent = try cli.run(scan, environment: bus.environment)
        XCTAssertEqual(absent.status, 0, absent.stdout + absent.stderr)
        XCTAssertTrue(absent.stdout.contains("cannot scan: bluetoothd is not running"), absent.stdout)
        XCTAssertTrue(absent.stdout.contains("sudo systemctl enable --now bluetooth"), absent.stdout)
        XCTAssertFalse(try AgentConfig.load(path: cli.configPath, environment: [:]).health.enabled)
    }
}

/// Work on another thread while the test's thread drives the binary; `join` waits for it
/// and rethrows what it threw.
final class Background: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    // Written by the worker before `done` is signalled, read after.
    private var failure: (any Error)?

    init(_ work: @escaping @Sendable () throws -> Void) {
        Thread.detachNewThread { [self] in
            do { try work() } catch { failure = error }
            done.signal()
        }
    }

    func join(timeout: TimeInterval = 60) throws {
        guard done.wait(timeout: .now() + timeout) == .success else { throw TimedOut(what: "the background work") }
        if let failure { throw failure }
    }
}
