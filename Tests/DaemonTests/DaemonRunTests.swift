import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// `ariata-agent run` as systemd runs it: a child process against a real gpsd, real ALSA
/// capture, a real health file and the reference receiver.
final class DaemonRunTests: XCTestCase {
    func testAllThreeStreamsReachTheReceiverAndSIGTERMWritesThePartialChunk() throws {
        // 20 s chunks overlapping by 2 s: a new chunk starts every 18 s.
        let rig = try DaemonRig(chunkSeconds: 20, overlapSeconds: 2)
        try rig.startAgent()
        try rig.appendHeartRates([61, 62, 63, 64, 65])

        try waitUntil("records of all three streams at the receiver", timeout: 90) {
            let stored = try rig.receiver.stats().records
            return (stored[StreamName.location.wireName] ?? 0) >= 2 && (stored[StreamName.microphone.wireName] ?? 0) >= 1 && (stored[StreamName.health.wireName] ?? 0) >= 5
        }
        // sd_notify: READY once started, then STATUS and WATCHDOG from the supervisor.
        let notes = rig.notifySocket.drain()
        XCTAssertTrue(notes.contains { $0.hasPrefix("READY=1") }, "\(notes)")
        XCTAssertTrue(notes.contains { $0.hasPrefix("STATUS=") && $0.contains("location") }, "\(notes)")
        XCTAssertTrue(notes.contains("WATCHDOG=1"), "\(notes)")

        // Stop in the middle of the second chunk: 9 s after the first one ended.
        let database = try AgentDatabase(readOnlyPath: rig.databasePath)
        let first = try XCTUnwrap(database.recordQueue.records(stream: .microphone).first)
        let firstFields = try XCTUnwrap(JSONSerialization.jsonObject(with: first.payload) as? [String: Any])
        let firstEnd = try XCTUnwrap((firstFields["timestamp_end"] as? String).flatMap(RFC3339.date(from:)))
        let stopAt = firstEnd.addingTimeInterval(9)
        Thread.sleep(forTimeInterval: max(0, stopAt.timeIntervalSinceNow))
        let status = rig.stopAgent()
        XCTAssertEqual(status, 0, rig.agentLog)

        let chunks = try AgentDatabase(readOnlyPath: rig.databasePath).recordQueue.records(stream: .microphone)
        let last = try XCTUnwrap(chunks.last)
        XCTAssertNotEqual(last.id, first.id, "the chunk in progress is written on SIGTERM")
        let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: last.payload) as? [String: Any])
        let duration = try XCTUnwrap(fields["duration"] as? Double)
        let lastEnd = try XCTUnwrap((fields["timestamp_end"] as? String).flatMap(RFC3339.date(from:)))
        XCTAssertLessThan(duration, 20, "a partial chunk")
        XCTAssertGreaterThan(lastEnd, stopAt.addingTimeInterval(-4), "the audio up to SIGTERM is kept")
        XCTAssertTrue(rig.agentLog.contains("shutting down"), rig.agentLog)
        XCTAssertFalse(rig.agentLog.contains("daemon-token"), "the token is never logged")

        // Nothing pending is lost: every record is either delivered or still pending.
        let final = try AgentDatabase(readOnlyPath: rig.databasePath)
        for stream in StreamName.allCases {
            let all = try final.recordQueue.records(stream: stream)
            XCTAssertEqual(all.filter { $0.status == .failed }.count, 0, "\(stream)")
            let uploadedIDs = Set(all.filter { $0.status == .uploaded }.map { $0.id.uuidString.lowercased() })
            let received = Set(try rig.receiver.storedIDs(stream))
            XCTAssertTrue(uploadedIDs.isSubset(of: received), "\(stream): uploaded means the receiver has it")
        }
        let health = try final.recordQueue.records(stream: .health).compactMap {
            (try JSONSerialization.jsonObject(with: $0.payload) as? [String: Any])?["value"] as? Double
        }
        XCTAssertEqual(health, [61, 62, 63, 64, 65])
    }

    func testACrashedStreamIsMarkedUnhealthyRestartedAndRecovers() throws {
        let rig = try DaemonRig(checkInterval: 1)
        try rig.startAgent()
        let database = try rig.openDatabase()
        try waitUntil("location records", timeout: 40) { try database.recordQueue.count(stream: .location, status: .pending)
            + database.recordQueue.count(stream: .location, status: .uploaded) >= 1 }

        rig.gps.killGPSD()
        try waitUntil("the supervisor to store location as unhealthy", timeout: 30) {
            try database.agentState.storedLiveness().first { $0.component == "location" }?.state == "unhealthy"
        }
        let reason = try XCTUnwrap(database.agentState.storedLiveness().first { $0.component == "location" }?.reason)
        XCTAssertTrue(reason.contains("gpsd"), reason)
        try waitUntil("a restart of the stream by the supervisor", timeout: 30) {
            rig.agentLog.contains("location still unhealthy") && rig.agentLog.contains("restarting it")
        }

        try rig.gps.startGPSD()
        rig.restartFeed()
        let countBefore = try database.recordQueue.records(stream: .location).count
        try waitUntil("location records again", timeout: 40) { try database.recordQueue.records(stream: .location).count > countBefore }
        try waitUntil("location healthy again", timeout: 30) {
            try database.agentState.storedLiveness().first { $0.component == "location" }?.state == "healthy"
        }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
    }

    func testPauseAndResumeFromAnotherProcessSurviveARestart() throws {
        let rig = try DaemonRig(checkInterval: 1)
        try rig.startAgent()
        let database = try rig.openDatabase()

        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        let pause = try cli.run(["pause", "microphone"])
        XCTAssertEqual(pause.status, 0, pause.stderr)
        XCTAssertTrue(pause.stdout.contains("paused microphone: the daemon (pid"), pause.stdout)
        try waitUntil("the microphone to stop", timeout: 20) {
            rig.agentLog.contains("microphone paused")
        }

        // Restart the daemon: the pause holds.
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        try rig.startAgent()
        try waitUntil("the restarted daemon to report", timeout: 30) { rig.agentLog.contains("microphone paused") }
        // Stopping the paused stream wrote its chunk in progress; from here on nothing comes.
        let chunksWhenPaused = try database.recordQueue.records(stream: .microphone).count
        Thread.sleep(forTimeInterval: 8)   // longer than a chunk: a running microphone would write one
        XCTAssertEqual(try database.recordQueue.records(stream: .microphone).count, chunksWhenPaused, "no audio while paused")
        let status = try cli.run(["status", "--json"])
        let report = try StatusReport.decode(Data(status.stdout.utf8))
        XCTAssertEqual(report.streams.first { $0.name == "microphone" }?.liveness, "paused")
        XCTAssertTrue(report.daemon.running)

        let resume = try cli.run(["resume", "microphone"])
        XCTAssertEqual(resume.status, 0, resume.stderr)
        try waitUntil("audio again after resume", timeout: 40) {
            try database.recordQueue.records(stream: .microphone).count > chunksWhenPaused
        }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
    }

    func testSIGHUPReloadsAGoodConfigAndKeepsRunningOnABadOne() throws {
        let rig = try DaemonRig(checkInterval: 1)
        try rig.startAgent()
        _ = try rig.openDatabase()
        let good = try String(contentsOfFile: rig.configPath, encoding: .utf8)

        try (good + "\n[location]\nintervall = 3\n").write(toFile: rig.configPath, atomically: true, encoding: .utf8)
        rig.agent?.signal(SIGHUP)
        try waitUntil("the bad config to be reported", timeout: 20) {
            rig.agentLog.contains("not reloading") && rig.agentLog.contains("keeps running")
        }
        XCTAssertTrue(rig.agent?.isRunning ?? false)

        try good.replacingOccurrences(of: "[microphone]\n", with: "[microphone]\nenabled = false\n")
            .write(toFile: rig.configPath, atomically: true, encoding: .utf8)
        rig.agent?.signal(SIGHUP)
        try waitUntil("the reload", timeout: 30) {
            rig.agentLog.contains("reloading the configuration") && rig.agentLog.contains("microphone disabled")
        }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
    }

    func testRefusesToRunWithoutOnboarding() throws {
        let dir = try TemporaryDirectory("not-onboarded")
        let cli = try AgentCLI.writeConfig(in: dir.path)
        let result = try cli.run(["run"])
        XCTAssertEqual(result.status, 78)
        XCTAssertTrue(result.stderr.contains("run 'ariata-agent onboard' first"), result.stderr)

        try "[location]\ninterval = 0\n".write(toFile: cli.configPath, atomically: true, encoding: .utf8)
        let bad = try cli.run(["run"])
        XCTAssertEqual(bad.status, 78)
        XCTAssertTrue(bad.stderr.contains("agent.toml: location.interval: 0 is out of range"), bad.stderr)
    }
}
