import AgentCore
import Foundation
import TestRigs
import XCTest

/// Laptop or board: `onboard` on a machine with a desktop sound server (a real PipeWire
/// session, `PipeWireRig`), and `doctor` for an agent outside that session (the system
/// service's case). The built binary against the reference receiver.
final class OnboardUserServiceTests: XCTestCase {
    static let token = "user-service-token-7a2d"

    func makeRig() throws -> PipeWireRig {
        do {
            return try PipeWireRig()
        } catch let missing as NotInstalled {
            throw XCTSkip("no PipeWire session can be started here: \(missing)")
        }
    }

    func testOnboardAsTheUserServiceWritesUnderHomeAndRecordsThroughTheSession() throws {
        let rig = try makeRig()
        rig.feed(TestSignal.tone(seconds: 1, dbfs: -20))
        let dir = try TemporaryDirectory("onboard-user")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token)
        defer { receiver.stop() }
        let home = dir.file("home")
        let tokenFile = dir.file("token")
        try Self.token.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        var environment = rig.environment
        environment["HOME"] = home
        environment["XDG_CONFIG_HOME"] = "\(home)/.config"
        environment["XDG_STATE_HOME"] = "\(home)/.local/state"
        environment["SUDO_USER"] = ""
        let cli = AgentCLI(directory: dir.path, configPath: "\(home)/.config/ariata/agent.toml")
        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token-file", tokenFile, "--device-name", "laptop", "--yes"],
                                 environment: environment, withConfig: false)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("a desktop sound server runs for root: PipeWire (\(rig.runtimeDirectory.path)/pipewire-0)"), result.stdout)
        XCTAssertTrue(result.stdout.contains("the agent runs as the user service of root; configuration: \(cli.configPath)"), result.stdout)
        XCTAssertTrue(result.stdout.contains("ok    ALSA capture device \"default\": opens for 16 kHz mono capture"),
                      "the microphone check records through the session\n\(result.stdout)")
        XCTAssertFalse(result.stdout.contains("in group audio"), "through the sound server no group is needed\n\(result.stdout)")
        // No systemd in the test's machine: the commands of the user service are printed.
        XCTAssertTrue(result.stdout.contains("loginctl enable-linger root; systemctl --user enable --now ariata-agent.service"), result.stdout)
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: cli.configPath)[.posixPermissions] as? NSNumber)
        XCTAssertEqual(mode.intValue & 0o777, 0o600)
        let written = try AgentConfig.load(path: cli.configPath, environment: [:])
        XCTAssertEqual(written.server.endpoint, receiver.endpoint)
        XCTAssertEqual(written.storage.database, "\(home)/.local/state/ariata/agent.sqlite", "the queue under the user's state directory")
        XCTAssertEqual(written.microphone.device, "default")

        // --system-service on the same machine: the system service's files, with the note
        // that it cannot record through the sound server.
        let system = try AgentCLI.writeConfig(in: dir.path, extra: "[location]\nenabled = false")
        let forced = try system.run(["onboard", "--endpoint", receiver.endpoint, "--token-file", tokenFile, "--system-service", "--yes"],
                                    environment: environment)
        XCTAssertEqual(forced.status, 0, forced.stdout + forced.stderr)
        XCTAssertTrue(forced.stdout.contains("--system-service: the system service cannot record through PipeWire"), forced.stdout)
        XCTAssertTrue(forced.stdout.contains("the agent runs as the system service (user ariata); configuration: \(system.configPath)"), forced.stdout)
    }

    /// On a terminal with a sound-server session, onboard asks; Enter takes the user
    /// service, "n" the system service.
    func testOnATerminalItAsksAndEnterTakesTheUserService() throws {
        let rig = try makeRig()
        let dir = try TemporaryDirectory("onboard-user-tty")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: Self.token)
        defer { receiver.stop() }
        let tokenFile = dir.file("token")
        try Self.token.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let home = dir.file("home")
        var environment: [String: String?] = rig.environment.mapValues { $0 }
        environment["HOME"] = home
        environment["XDG_CONFIG_HOME"] = "\(home)/.config"
        environment["XDG_STATE_HOME"] = "\(home)/.local/state"
        environment["SUDO_USER"] = nil
        environment["TERM"] = "xterm"
        let binary = try BuildProducts.executable("ariata-agent")
        let flags = ["onboard", "--endpoint", receiver.endpoint, "--token-file", tokenFile, "--device-name", "laptop"]
        let user = try PexpectRig.run(command: [binary] + flags, script: """
            expect("a desktop sound server runs for root: PipeWire")
            expect("Run the agent as your user service (recommended here)? [Y/n]: ")
            child.sendline("")
            expect("the agent runs as the user service of root; configuration: \(home)/.config/ariata/agent.toml")
            expect("pipewire:NODE=")
            expect("Microphone (a number from the list, or an ALSA device name) [default]: ")
            child.sendline("")
            expect("ok    ALSA capture device \\"default\\": opens")
            expect("The location check failed. Disable location for now? [y/N]: ")
            child.sendline("")
            expect("loginctl enable-linger root; systemctl --user enable --now ariata-agent.service")
            expect("Done.")
            finish()
            """, directory: dir.path, environment: environment)
        XCTAssertEqual(user.status, 0, user.log + "\n" + user.transcript)
        XCTAssertEqual(try AgentConfig.load(path: "\(home)/.config/ariata/agent.toml", environment: [:]).storage.database,
                       "\(home)/.local/state/ariata/agent.sqlite")

        let systemConfig = try AgentCLI.writeConfig(in: dir.path, extra: "[location]\nenabled = false").configPath
        let system = try PexpectRig.run(command: [binary] + flags + ["--config", systemConfig], script: """
            expect("Run the agent as your user service (recommended here)? [Y/n]: ")
            child.sendline("n")
            expect("the agent runs as the system service (user ariata); configuration: \(systemConfig)")
            expect("Microphone (a number from the list, or an ALSA device name) [default]: ")
            child.sendline("")
            expect("Done.")
            finish()
            """, directory: dir.path, environment: environment)
        XCTAssertEqual(system.status, 0, system.log + "\n" + system.transcript)
        XCTAssertEqual(try AgentConfig.load(path: systemConfig, environment: [:]).storage.database, dir.file("agent.sqlite"),
                       "the system service's queue stays where the file has it")
    }

    func testThroughSudoTheUserServiceIsTheCallersToSetUp() throws {
        let dir = try TemporaryDirectory("onboard-sudo")
        let cli = try AgentCLI.writeConfig(in: dir.path)
        let result = try cli.run(["onboard", "--endpoint", "http://127.0.0.1:9", "--token", "x", "--user-service", "--yes"],
                                 environment: ["SUDO_USER": "nobody"])
        XCTAssertEqual(result.status, 64, result.stdout + result.stderr)
        XCTAssertTrue(result.stderr.contains("--user-service sets up the service of the user who runs onboard: run it as nobody, without sudo"), result.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(dir.path)/agent.sqlite"))
        let both = try cli.run(["onboard", "--user-service", "--system-service", "--yes"])
        XCTAssertEqual(both.status, 64)
        XCTAssertTrue(both.stderr.contains("give one of --user-service and --system-service"), both.stderr)
    }

    /// The system service on a PipeWire machine: `default` goes to PipeWire, which the
    /// agent's user has no session of; doctor says so and names the fix.
    func testDoctorOutsideTheSessionNamesTheFix() throws {
        let rig = try makeRig()
        _ = rig
        let dir = try TemporaryDirectory("doctor-no-session")
        let elsewhere = try TemporaryDirectory("ariata-no-session")
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: "[location]\nenabled = false\n[microphone]\ndevice = \"default\"")
        let result = try cli.run(["doctor"], environment: ["XDG_RUNTIME_DIR": elsewhere.path, "PIPEWIRE_RUNTIME_DIR": ""])
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("FAIL  ALSA capture device \"default\": goes to a sound server (PipeWire or PulseAudio) this user cannot reach"), result.stdout)
        XCTAssertTrue(result.stdout.contains("fix: on a laptop or desktop run the agent as your user service: ariata-agent onboard --user-service"), result.stdout)

        // The same agent inside the session: the check passes.
        let inside = try cli.run(["doctor"], environment: rig.environment)
        XCTAssertTrue(inside.stdout.contains("ok    ALSA capture device \"default\": opens for 16 kHz mono capture"), inside.stdout)
    }
}
