import AgentCore
import Foundation
import TestRigs
import XCTest

/// `ariata-agent onboard` choosing the microphone: the built binary, the reference
/// receiver on 127.0.0.1, and two capture devices of the ALSA rig listed in ALSA's device
/// hints (the binary inherits the rig's ALSA_CONFIG_PATH).
final class OnboardMicrophoneTests: XCTestCase {
    static let token = "mic-token-29aa"
    let chosen = "ariata_chosen_mic"
    let other = "ariata_other_mic"

    func makeRig(_ dir: TemporaryDirectory) throws -> ALSARig {
        let input = dir.file("tone.raw"), otherInput = dir.file("other.raw")
        try TestSignal.write(TestSignal.tone(seconds: 2, dbfs: -20), to: input)
        try TestSignal.write(TestSignal.tone(seconds: 2, dbfs: -20, frequency: 1_000), to: otherInput)
        return try ALSARig(devices: [(chosen, input), (other, otherInput)])
    }

    func seedConfig(_ dir: TemporaryDirectory) throws -> AgentCLI {
        try AgentCLI.writeConfig(in: dir.path, extra: """
            [location]
            enabled = false
            [microphone]
            device = "null"
            """)
    }

    /// On a terminal: the list with readable names, a number out of range asked again, a
    /// device that does not open offered to be chosen again, the one picked by number
    /// checked and written.
    func testOnATerminalTheListedDevicePickedByNumberIsCheckedAndWritten() throws {
        let dir = try TemporaryDirectory("onboard-mic")
        let rig = try makeRig(dir)
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token)
        defer { receiver.stop() }
        let cli = try seedConfig(dir)
        try rig.unplug(other)
        let binary = try BuildProducts.executable("ariata-agent")
        let outcome = try PexpectRig.run(command: [binary, "onboard", "--config", cli.configPath, "--endpoint", receiver.endpoint,
                                                   "--token", Self.token], script: """
            expect("Capture devices:")
            child.expect(r"\\n +(\\d+) +\(chosen) +\(ALSARig.description(of: chosen))")
            number = child.match.group(1)
            expect("\(other)  \(ALSARig.description(of: other))")
            expect("Microphone (a number from the list, or an ALSA device name) [null]: ")
            child.sendline("99")
            expect("there is no device 99: give a number from 1 to")
            expect("Microphone (a number from the list, or an ALSA device name) [null]: ")
            child.sendline("\(other)")
            expect('ALSA capture device "\(other)": cannot open it')
            expect("Choose another microphone? [Y/n]: ")
            child.sendline("")
            expect("Microphone (a number from the list, or an ALSA device name) [null]: ")
            child.sendline(number)
            expect('ALSA capture device "\(chosen)": opens for 16 kHz mono capture')
            expect('while it is missing, capture falls back to "default" ([microphone] fallback_device)')
            expect("Device name (how the server lists it) [")
            child.sendline("mic-box")
            expect("Done.")
            finish()
            """, directory: dir.path, environment: ["TERM": "xterm", "NO_COLOR": nil])
        XCTAssertEqual(outcome.status, 0, outcome.log + "\n" + outcome.transcript)
        let written = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertEqual(written.microphone.device, chosen)
        XCTAssertEqual(written.microphone.fallbackDevice, "default")
        XCTAssertTrue(written.microphone.enabled)
        let text = try String(contentsOfFile: cli.configPath, encoding: .utf8)
        XCTAssertTrue(text.contains("device = '\(chosen)'"), text)
    }

    /// Scripted: --microphone-device writes the name given; --yes alone lists the devices
    /// and keeps the current one.
    func testScriptedInstallsChooseWithTheFlagOrKeepTheCurrentDevice() throws {
        let dir = try TemporaryDirectory("onboard-mic-yes")
        let rig = try makeRig(dir)
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token)
        defer { receiver.stop() }
        let cli = try seedConfig(dir)
        let base = ["onboard", "--endpoint", receiver.endpoint, "--token", Self.token, "--device-name", "box", "--yes"]

        let chosenRun = try cli.run(base + ["--microphone-device", rig.device])
        XCTAssertEqual(chosenRun.status, 0, chosenRun.stdout + chosenRun.stderr)
        XCTAssertTrue(chosenRun.stdout.contains("microphone: \"\(chosen)\" (--microphone-device)"), chosenRun.stdout)
        XCTAssertTrue(chosenRun.stdout.contains("ALSA capture device \"\(chosen)\": opens for 16 kHz mono capture"), chosenRun.stdout)
        XCTAssertEqual(try AgentConfig.load(path: cli.configPath, environment: [:]).microphone.device, chosen)

        let kept = try cli.run(base)
        XCTAssertEqual(kept.status, 0, kept.stdout + kept.stderr)
        XCTAssertTrue(kept.stdout.contains("\(other)  \(ALSARig.description(of: other))"), kept.stdout)
        XCTAssertTrue(kept.stdout.contains("\(chosen)  \(ALSARig.description(of: chosen))   (current)"), kept.stdout)
        XCTAssertFalse(kept.stdout.contains("  null  "), "ALSA's null device (silence) is not offered\n\(kept.stdout)")
        XCTAssertTrue(kept.stdout.contains("microphone: \"\(chosen)\" kept (--microphone-device chooses another)"), kept.stdout)
        XCTAssertEqual(try AgentConfig.load(path: cli.configPath, environment: [:]).microphone.device, chosen)

        let empty = try cli.run(base + ["--microphone-device", " "])
        XCTAssertEqual(empty.status, 64, empty.stdout + empty.stderr)
        XCTAssertTrue(empty.stderr.contains("--microphone-device: give an ALSA capture device name"), empty.stderr)
    }

    /// In a PipeWire session (PipeWire, WirePlumber and pipewire-pulse started in the
    /// test's own session D-Bus and runtime directory, a `module-pipe-source` as the
    /// microphone): its source is listed with its description as `pipewire:NODE=…`, and
    /// the name opens through pipewire-alsa (the device check passes).
    func testAPipeWireSessionsSourceIsListedAndOpensThroughPipeWireALSA() throws {
        for program in ["dbus-run-session", "pipewire", "wireplumber", "pipewire-pulse", "pactl"] {
            _ = try ChildProcess.locate(program)
        }
        let dir = try TemporaryDirectory("onboard-pipewire")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token)
        defer { receiver.stop() }
        let cli = try seedConfig(dir)
        let runtime = dir.file("run")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let session = dir.file("session.sh")
        try """
            # $1: the runtime directory; the rest: the command to run in the session.
            export XDG_RUNTIME_DIR="$1"; shift
            unset ALSA_CONFIG_PATH PULSE_SERVER
            pipewire >"$XDG_RUNTIME_DIR/pipewire.log" 2>&1 & pids=$!
            wireplumber >"$XDG_RUNTIME_DIR/wireplumber.log" 2>&1 & pids="$pids $!"
            pipewire-pulse >"$XDG_RUNTIME_DIR/pipewire-pulse.log" 2>&1 & pids="$pids $!"
            trap 'kill $pids 2>/dev/null' EXIT
            waitfor() { i=0; until "$@" >/dev/null 2>&1; do i=$((i+1)); [ $i -lt 150 ] || { echo "timed out: $*" >&2; exit 90; }; sleep 0.1; done; }
            waitfor pactl info
            pactl load-module module-pipe-source source_name=ariata_pipe_mic file="$XDG_RUNTIME_DIR/mic.fifo" \\
                format=s16le rate=16000 channels=1 source_properties=device.description=Ariata_pipe_microphone >/dev/null || exit 91
            waitfor sh -c 'pactl list sources short | grep -q ariata_pipe_mic'
            "$@"
            """.write(toFile: session, atomically: true, encoding: .utf8)
        let binary = try BuildProducts.executable("ariata-agent")
        let onboard = [binary, "onboard", "--config", cli.configPath, "--endpoint", receiver.endpoint, "--token", Self.token,
                       "--device-name", "laptop", "--yes"]

        let listed = try ChildProcess("dbus-run-session", ["--", "sh", session, runtime] + onboard, logDirectory: dir.path)
        XCTAssertEqual(listed.wait(timeout: 60), 0, listed.stdout() + listed.stderr())
        XCTAssertTrue(listed.stdout().contains("pipewire:NODE=ariata_pipe_mic  Ariata_pipe_microphone"), listed.stdout())
        XCTAssertFalse(listed.stdout().contains(".monitor"), "the outputs' monitors are not microphones\n\(listed.stdout())")

        let chosen = try ChildProcess("dbus-run-session", ["--", "sh", session, runtime] + onboard
                                      + ["--microphone-device", "pipewire:NODE=ariata_pipe_mic"], logDirectory: dir.path)
        XCTAssertEqual(chosen.wait(timeout: 60), 0, chosen.stdout() + chosen.stderr())
        XCTAssertTrue(chosen.stdout().contains("ALSA capture device \"pipewire:NODE=ariata_pipe_mic\": opens for 16 kHz mono capture"),
                      chosen.stdout())
        XCTAssertEqual(try AgentConfig.load(path: cli.configPath, environment: [:]).microphone.device, "pipewire:NODE=ariata_pipe_mic")
    }
}
