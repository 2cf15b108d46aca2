import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// `ariata-agent run` on a machine with a real PipeWire session (`PipeWireRig`, a pipe
/// source fed a 440 Hz tone at -20 dBFS): as the user service, inside the session, it
/// delivers the source's audio; as the system service, outside it, it says what to do.
final class PipeWireDaemonTests: XCTestCase {
    struct Setup {
        let rig: PipeWireRig
        let receiver: ReceiverRig
        let directory: TemporaryDirectory
        let cli: AgentCLI
        let clockSyncFile: String
    }

    func setUpAgent() throws -> Setup {
        let rig: PipeWireRig
        do { rig = try PipeWireRig() } catch let missing as NotInstalled { throw XCTSkip("no PipeWire session can be started here: \(missing)") }
        rig.feed(TestSignal.tone(seconds: 1, dbfs: -20))
        let directory = try TemporaryDirectory("ariata-pw-daemon")
        let receiver = try ReceiverRig(logDirectory: directory.path, token: "pipewire-token")
        try receiver.start()
        let clockSyncFile = directory.file("clock-sync")
        try "synchronised\n".write(toFile: clockSyncFile, atomically: true, encoding: .utf8)
        let cli = try AgentCLI.writeConfig(in: directory.path, server: """
            endpoint = "\(receiver.endpoint)"
            token = "pipewire-token"
            device_id = "pipewire-laptop"
            """, extra: """
            [upload]
            interval = 5
            [location]
            enabled = false
            [health]
            enabled = false
            [microphone]
            device = "default"
            chunk_seconds = 5
            overlap_seconds = 1
            [daemon]
            health_interval = 1
            """)
        return Setup(rig: rig, receiver: receiver, directory: directory, cli: cli, clockSyncFile: clockSyncFile)
    }

    func startAgent(_ setup: Setup, environment: [String: String]) throws -> ChildProcess {
        let unit = try DaemonRig.unitEnvironment(unit: "systemd/user/ariata-agent.service")
        return try ChildProcess(try BuildProducts.executable("ariata-agent"), ["run", "--config", setup.cli.configPath],
                                name: "agent", logDirectory: setup.directory.path,
                                environment: unit.merging(environment) { $1 }.merging(["ARIATA_CLOCK_SYNC_FILE": setup.clockSyncFile]) { $1 })
    }

    func testAsTheUserServiceItDeliversTheSessionsMicrophone() throws {
        let setup = try setUpAgent()
        defer { setup.receiver.stop() }
        let agent = try startAgent(setup, environment: setup.rig.environment)
        defer { agent.stop() }
        try waitUntil("a microphone chunk at the receiver", timeout: 25) {
            guard agent.isRunning else { throw RigFailed("the agent exited: \(agent.stderr())") }
            return try setup.receiver.stats().stored(.microphone) >= 1
        }
        agent.stop(grace: 10)
        let database = try AgentDatabase(readOnlyPath: setup.cli.directory + "/agent.sqlite")
        let levels = try database.recordQueue.records(stream: .microphone).map {
            try XCTUnwrap((try JSONSerialization.jsonObject(with: $0.payload) as? [String: Any])?["average_db_level"] as? Double)
        }
        print("daemon chunk levels: \(levels)")
        XCTAssertFalse(levels.isEmpty)
        for level in levels { XCTAssertEqual(level, -20, accuracy: 1, "\(levels)") }
        XCTAssertFalse(agent.stderr().contains("microphone unhealthy"), agent.stderr())
    }

    func testAsTheSystemServiceOutsideTheSessionItSaysWhatToDo() throws {
        let setup = try setUpAgent()
        defer { setup.receiver.stop() }
        let elsewhere = try TemporaryDirectory("ariata-no-session")
        let agent = try startAgent(setup, environment: ["XDG_RUNTIME_DIR": elsewhere.path, "PIPEWIRE_RUNTIME_DIR": ""])
        defer { agent.stop() }
        var microphone: StatusReport.Stream?
        try waitUntil("status shows the microphone unhealthy", timeout: 20) {
            guard agent.isRunning else { throw RigFailed("the agent exited: \(agent.stderr())") }
            let status = try setup.cli.run(["status", "--json"], environment: ["ARIATA_CLOCK_SYNC_FILE": setup.clockSyncFile])
            microphone = (try? StatusReport.decode(Data(status.stdout.utf8)))?.streams.first { $0.name == "microphone" }
            return microphone?.liveness == "unhealthy"
        }
        let reason = try XCTUnwrap(microphone?.reason)
        XCTAssertTrue(reason.contains("goes to a sound server (PipeWire or PulseAudio)"), reason)
        XCTAssertTrue(reason.contains("ariata-agent onboard --user-service"), reason)
        XCTAssertTrue(agent.isRunning, "a microphone it cannot reach does not stop the agent")
        agent.stop(grace: 10)
        XCTAssertTrue(agent.stderr().contains("ariata-agent onboard --user-service"), "the log names the fix: \(agent.stderr())")
    }
}
