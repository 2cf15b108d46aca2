import AgentCore
@testable import Daemon
import Foundation
import Platform
import Reports
import Logging
import Synchronization
import TestRigs
import Upload
import XCTest

/// The server's stream switches (`POST /api/devices/verify`) in the daemon, in process on
/// a `VirtualScheduler` with the real receiver: asked at start and hourly, applied at
/// once, kept across a restart without network; the file is a veto
/// (docs/upload.md#the-servers-stream-switches). ServerSwitchWholeDaemonTests checks the
/// same through `ariata-agent run` on the real clock.
final class ServerSwitchDaemonTests: XCTestCase {
    typealias Rig = VirtualTimeDaemonTests.Rig

    /// Counting streams that also keep the configuration each was made with.
    struct RecordingComponents: ComponentFactory {
        let counts: VirtualTimeDaemonTests.Counts
        let made: Made
        let scheduler: VirtualScheduler
        var uploads = false

        func makeStream(_ stream: StreamName, config: AgentConfig, database: AgentDatabase, logger: Logger) -> any CaptureStream {
            made.add(stream, config)
            return VirtualTimeDaemonTests.CountingStream(stream, counts: counts)
        }

        func makeUploader(config: AgentConfig, database: AgentDatabase, logger: Logger) -> any UploadComponent {
            guard uploads else { return DaemonCommitSyncTests.IdleUploader() }
            return Uploader(server: config.server, upload: config.upload, queue: database.recordQueue, clock: scheduler,
                            logger: logger, random: { 0 }, scheduler: scheduler)
        }
    }

    final class Made: Sendable {
        private let configs = Mutex<[StreamName: AgentConfig]>([:])
        func add(_ stream: StreamName, _ config: AgentConfig) { configs.withLock { $0[stream] = config } }
        func last(_ stream: StreamName) -> AgentConfig? { configs.withLock { $0[stream] } }
    }

    private func daemon(_ rig: Rig, made: Made, uploads: Bool = false) -> AgentDaemon {
        AgentDaemon(config: rig.config, database: rig.database,
                    factory: RecordingComponents(counts: rig.counts, made: made, scheduler: rig.scheduler, uploads: uploads),
                    clock: rig.scheduler, scheduler: rig.scheduler, roundInterval: 30, trimsMemory: false, logger: Logger(label: "test"))
    }

    private func connect(_ rig: inout Rig, to receiver: ReceiverRig) {
        rig.config.server.endpoint = receiver.endpoint
        rig.config.server.token = Secret("test-token")
        rig.config.server.deviceID = "test-device"
        rig.config.server.connectTimeout = 5
    }

    private func status(_ rig: Rig) -> StatusReport {
        StatusReader(clock: rig.scheduler).read(config: rig.config, configFile: rig.directory.file("agent.toml"))
    }

    func testSwitchesAreAskedAtStartAndHourlyAndApplied() throws {
        var rig = try Rig("switches-hourly", streams: [.location, .health], toml: """
            [[health.source]]
            kind = "file"
            path = "/dev/null"
            """)
        let receiver = try ReceiverRig(logDirectory: rig.directory.path)
        connect(&rig, to: receiver)
        let made = Made()
        let daemon = daemon(rig, made: made)
        daemon.start()
        rig.scheduler.advance(by: 1)
        XCTAssertEqual(try receiver.verifyCalls(), [200], "asked at start")
        XCTAssertTrue(rig.counts.running(.location))
        XCTAssertEqual(made.last(.location)?.location.interval, 10)
        XCTAssertEqual(rig.counts.starts(.location), 1, "an answer that changes nothing restarts nothing")

        // Switched off in the server's web UI, with a new interval: nothing changes before
        // the hourly ask, everything at it.
        try receiver.setVerify(["location": ["is_enabled": false, "config": ["update_interval_seconds": 30]],
                                "healthkit": ["config": ["enabled_metrics": ["heart_rate"]]]])
        rig.scheduler.advance(by: 3_598)
        XCTAssertEqual(try receiver.verifyCalls().count, 1, "not asked again within the hour")
        XCTAssertTrue(rig.counts.running(.location))
        rig.scheduler.advance(by: 2)
        XCTAssertEqual(try receiver.verifyCalls().count, 2, "asked again after an hour")
        XCTAssertFalse(rig.counts.running(.location), "switched off by the server")
        XCTAssertTrue(rig.counts.running(.health))
        XCTAssertEqual(made.last(.health)?.health.serverMetrics, ["heart_rate"], "health restarted with the server's metrics")

        var report = status(rig)
        let location = try XCTUnwrap(report.streams.first { $0.name == "location" })
        XCTAssertEqual(location.switchedOffBy, "server")
        XCTAssertEqual(location.liveness, "disabled")
        XCTAssertEqual(report.serverSwitches?.switchedOff, ["location"])
        XCTAssertNotNil(report.serverSwitches?.fetchedAt)
        XCTAssertTrue(StatusText(colour: false, now: rig.scheduler.now()).render(report).contains("off (server)"))
        let microphone = try XCTUnwrap(report.streams.first { $0.name == "microphone" })
        XCTAssertEqual(microphone.switchedOffBy, "config", "off in the file")

        // Switched on again: it resumes with the server's interval (the file sets none).
        try receiver.setVerify(["location": ["is_enabled": true]])
        rig.scheduler.advance(by: 3_600)
        XCTAssertTrue(rig.counts.running(.location), "resumed")
        XCTAssertEqual(made.last(.location)?.location.interval, 30)
        XCTAssertEqual(rig.counts.starts(.microphone), 0, "the file's veto: the server cannot turn on a stream the file turns off")

        // A server without switches (Virtues): the file alone decides.
        try receiver.setVerify(["location": ["is_enabled": false]], status: 404)
        rig.scheduler.advance(by: 3_600)
        XCTAssertEqual(try receiver.verifyCalls().last, 404)
        XCTAssertTrue(rig.counts.running(.location))
        report = status(rig)
        XCTAssertEqual(report.serverSwitches?.supported, false)
        XCTAssertNil(report.streams.first { $0.name == "location" }?.switchedOffBy)
        daemon.stop()
    }

    /// Right after pairing Ariata answers `configuration_complete: false` with no stream:
    /// nothing is captured, `status` says why (a state of its own, not a warning), and the
    /// daemon asks every minute, so capture starts within a minute of a stream being
    /// switched on in the web UI; then hourly again.
    func testNothingSwitchedOnYetCapturesNothingAndAsksEveryMinute() throws {
        var rig = try Rig("switches-unconfigured", streams: [.location, .health], toml: """
            [[health.source]]
            kind = "file"
            path = "/dev/null"
            """)
        let receiver = try ReceiverRig(logDirectory: rig.directory.path, arguments: [
            "--verify", "location=off", "--verify", "microphone=off", "--verify", "healthkit=off"])
        connect(&rig, to: receiver)
        let daemon = daemon(rig, made: Made())
        daemon.start()
        rig.scheduler.advance(by: 1)
        XCTAssertEqual(try receiver.verifyCalls(), [200])
        XCTAssertFalse(rig.counts.running(.location), "nothing is captured before the person switches a stream on")
        XCTAssertFalse(rig.counts.running(.health))

        let report = status(rig)
        XCTAssertEqual(report.serverSwitches?.configurationComplete, false)
        XCTAssertEqual(report.streams.first { $0.name == "health" }?.reason, ServerSwitches.notConfiguredReason)
        XCTAssertEqual(report.warnings.filter { !$0.contains("the daemon is not running") }, [],
                       "waiting for the person is not a warning (this daemon runs in the test's process)")
        let text = StatusText(colour: false, now: rig.scheduler.now()).render(report)
        XCTAssertTrue(text.contains("waiting (server)"), text)
        XCTAssertTrue(text.contains("turn them on in its web UI"), text)
        XCTAssertEqual(report.server?.generation, "ariata", "the server's identity is refreshed with the switches")
        XCTAssertTrue(text.contains("server     Ariata 0.1.0"), text)

        rig.scheduler.advance(by: 60)
        rig.scheduler.advance(by: 60)
        XCTAssertEqual(try receiver.verifyCalls().count, 3, "asked every minute while nothing is switched on")

        try receiver.setVerify(["healthkit": ["is_enabled": true]])
        rig.scheduler.advance(by: 60)
        XCTAssertEqual(try receiver.verifyCalls().count, 4)
        XCTAssertTrue(rig.counts.running(.health), "captures within a minute of being switched on")
        XCTAssertFalse(rig.counts.running(.location), "left out of the answer: still off")
        XCTAssertEqual(status(rig).streams.first { $0.name == "location" }?.reason, ServerSwitches.switchedOffReason)

        // That ask was 1 s ago (each advance ends 1 s past a minute's ask).
        rig.scheduler.advance(by: 3_598)
        XCTAssertEqual(try receiver.verifyCalls().count, 4, "hourly again once the configuration is complete")
        rig.scheduler.advance(by: 1)
        XCTAssertEqual(try receiver.verifyCalls().count, 5)
        daemon.stop()
    }

    func testTheFilesIntervalWinsOverTheServers() throws {
        var rig = try Rig("switches-interval", streams: [.location], toml: "[location]\ninterval = 7\n")
        let receiver = try ReceiverRig(logDirectory: rig.directory.path, arguments: ["--verify", "location.update_interval_seconds=30"])
        connect(&rig, to: receiver)
        let made = Made()
        let daemon = daemon(rig, made: made)
        daemon.start()
        rig.scheduler.advance(by: 1)
        XCTAssertEqual(try receiver.verifyCalls(), [200])
        XCTAssertEqual(made.last(.location)?.location.interval, 7)
        daemon.stop()
    }

    func testARestartWithoutNetworkKeepsTheSwitch() throws {
        var rig = try Rig("switches-restart", streams: [.location, .microphone])
        let receiver = try ReceiverRig(logDirectory: rig.directory.path, arguments: ["--verify", "microphone=off"])
        connect(&rig, to: receiver)
        let made = Made()
        var daemon = self.daemon(rig, made: made)
        daemon.start()
        rig.scheduler.advance(by: 1)
        XCTAssertFalse(rig.counts.running(.microphone))
        daemon.stop()

        receiver.stop()
        let startsBefore = rig.counts.starts(.microphone)
        daemon = self.daemon(rig, made: made)
        daemon.start()
        XCTAssertEqual(rig.counts.starts(.microphone), startsBefore, "off from the first moment, before any answer")
        XCTAssertTrue(rig.counts.running(.location))
        rig.scheduler.advance(by: 1)
        XCTAssertEqual(rig.counts.starts(.microphone), startsBefore, "a failed ask keeps the last switches")
        let report = status(rig)
        XCTAssertEqual(report.serverSwitches?.switchedOff, ["microphone"])
        XCTAssertNotNil(report.serverSwitches?.lastProblem)
        daemon.stop()

        // Moved to another server: the old one's switches do not apply there.
        rig.config.server.endpoint = "http://127.0.0.1:\(try FreePort.find())"
        daemon = self.daemon(rig, made: made)
        daemon.start()
        XCTAssertTrue(rig.counts.running(.microphone), "another server's switches do not apply")
        // The start asked the new server (nobody there): no answer, nothing switched off.
        let moved = try XCTUnwrap(status(rig).serverSwitches)
        XCTAssertNil(moved.fetchedAt, "the new server never answered")
        XCTAssertEqual(moved.switchedOff, [])
        daemon.stop()
    }

    /// A stream switched off in the web UI while the daemon was down never starts: the
    /// start asks before its streams start and waits for the answer, and the next ask is
    /// an hour later, not at once again.
    func testAStreamSwitchedOffWhileDownNeverStarts() throws {
        var rig = try Rig("switches-before-capture", streams: [.location, .microphone])
        let receiver = try ReceiverRig(logDirectory: rig.directory.path, arguments: ["--verify", "microphone=off"])
        connect(&rig, to: receiver)
        let daemon = daemon(rig, made: Made())
        daemon.start()
        XCTAssertEqual(try receiver.verifyCalls(), [200], "asked before the streams started")
        XCTAssertEqual(rig.counts.starts(.microphone), 0, "held from the first moment by the answer")
        XCTAssertTrue(rig.counts.running(.location))
        rig.scheduler.advance(by: 3_599)
        XCTAssertEqual(try receiver.verifyCalls().count, 1, "the start's ask counts as the hour's")
        rig.scheduler.advance(by: 1)
        XCTAssertEqual(try receiver.verifyCalls().count, 2)
        XCTAssertEqual(rig.counts.starts(.microphone), 0)
        // The coverage ledger says why: the server, from the start; the location captured.
        let ledger = try rig.database.coverage.spans([.microphone, .location], from: Date(timeIntervalSince1970: 0),
                                                     to: rig.scheduler.now().addingTimeInterval(1))
        XCTAssertEqual(Set(ledger.map { "\($0.stream.rawValue) \($0.state.rawValue)" }), ["microphone server_off", "location captured"])
        XCTAssertEqual(ledger.count, 2, "one span each, unchanged over the hour")
        daemon.stop()
    }

    /// A server that takes the request and never answers holds the start for
    /// `ServerSwitchKeeper.startWait` at most: the streams then start on the switches kept
    /// from the last answer (none here), and the ask goes on until its own timeout.
    func testAServerThatDoesNotAnswerDelaysTheStartBriefly() throws {
        var rig = try Rig("switches-stalled", streams: [.location])
        // Listens and never accepts: the connection is made, the request never answered.
        let stalled = try LoopbackSocket(listening: 8)
        defer { withExtendedLifetime(stalled) {} }   // listening until the daemon has stopped
        rig.config.server.endpoint = "http://127.0.0.1:\(stalled.port)"
        rig.config.server.token = Secret("test-token")
        rig.config.server.deviceID = "test-device"
        rig.config.server.connectTimeout = 5
        rig.config.server.requestTimeout = 30
        let daemon = daemon(rig, made: Made())
        let began = Date()
        daemon.start()
        let took = Date().timeIntervalSince(began)
        XCTAssertTrue(rig.counts.running(.location), "the streams started without the answer")
        // Well under the request's own timeout (the configuration's, tens of seconds).
        XCTAssertGreaterThanOrEqual(took, ServerSwitchKeeper.startWait, "the start waited for the answer")
        XCTAssertLessThan(took, ServerSwitchKeeper.startWait + 5, "the start did not wait for the request's timeout")
        print("measured: a start against a server that does not answer took \(String(format: "%.2f", took)) s")
        daemon.stop()
    }

    /// The first upload that succeeds after an outage asks again, without waiting an hour.
    func testTheFirstUploadAfterAnOutageAsksAgain() throws {
        var rig = try Rig("switches-outage", streams: [.location], toml: "[upload]\ninterval = 5\n")
        let receiver = try ReceiverRig(logDirectory: rig.directory.path, arguments: ["--fault", "status=503,times=2"])
        connect(&rig, to: receiver)
        let daemon = daemon(rig, made: Made(), uploads: true)
        daemon.start()
        rig.scheduler.advance(by: 1)
        XCTAssertEqual(try receiver.verifyCalls().count, 1)
        try rig.database.recordQueue.enqueue(rig.fix())
        try waitForUpload(rig, within: 600)
        XCTAssertEqual(try receiver.stats().statuses["503"], 2, "two failed uploads first")
        rig.scheduler.advance(by: 1)
        XCTAssertEqual(try receiver.verifyCalls().count, 2, "asked again at the recovery, not an hour later")
        daemon.stop()
    }

    private func waitForUpload(_ rig: Rig, within seconds: Int) throws {
        for _ in 0..<seconds where try rig.database.recordQueue.count(stream: .location, status: .pending) > 0 {
            rig.scheduler.advance(by: 1)
        }
        XCTAssertEqual(try rig.database.recordQueue.count(stream: .location, status: .pending), 0)
    }
}
