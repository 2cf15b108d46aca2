import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// `pause --for` against the real daemon: the pause ends by itself, also when the daemon
/// is restarted in the middle of it, and `status` says when.
final class TimedPauseDaemonTests: XCTestCase {
    func testATimedPauseEndsByItselfAcrossARestart() throws {
        let rig = try DaemonRig(chunkSeconds: 5, overlapSeconds: 0, checkInterval: 30)
        try rig.startAgent()
        let database = try rig.openDatabase()
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        try waitUntil("a first audio chunk", timeout: 40) { try !database.recordQueue.records(stream: .microphone).isEmpty }

        // The maintenance round runs every 30 s here: resuming on time is the pause-end timer's doing.
        let pausedAt = Date()
        let pause = try cli.run(["pause", "microphone", "--for", "20s"])
        XCTAssertEqual(pause.status, 0, pause.stderr)
        XCTAssertTrue(pause.stdout.contains("paused microphone until"), pause.stdout)
        try waitUntil("the microphone to stop", timeout: 20) { rig.agentLog.contains("microphone paused") }

        let report = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
        let mic = try XCTUnwrap(report.streams.first { $0.name == "microphone" })
        XCTAssertTrue(mic.paused)
        XCTAssertEqual(mic.liveness, "paused")
        let until = try XCTUnwrap(mic.pausedUntil)
        XCTAssertEqual(until.timeIntervalSince(pausedAt), 20, accuracy: 5)
        let text = try cli.run(["status"]).stdout
        XCTAssertTrue(text.contains("microphone: paused until"), text)

        // A restart in the middle: the pause holds, then ends by itself at its time.
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        try rig.startAgent()
        try waitUntil("the restarted daemon to keep the pause", timeout: 30) { rig.agentLog.contains("microphone paused") }
        let chunksWhilePaused = try database.recordQueue.records(stream: .microphone).count
        try waitUntil("audio again after the pause's end", timeout: until.timeIntervalSinceNow + 30) {
            try database.recordQueue.records(stream: .microphone).count > chunksWhilePaused
        }
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(until), -0.5, "not resumed before the end")
        XCTAssertTrue(rig.agentLog.contains("microphone: the timed pause has ended"), rig.agentLog)

        // Nothing was captured inside the pause: the chunk in progress ended at the pause.
        // A chunk's start is the capture time less ALSA's delay, and the rig's FIFO holds
        // up to 2 s of the feeder's audio written while the device was closed, so the
        // first chunk after the end may claim a start up to 2 s before it.
        for record in try database.recordQueue.records(stream: .microphone) {
            XCTAssertFalse(record.capturedAt > pausedAt.addingTimeInterval(1) && record.capturedAt < until.addingTimeInterval(-2.5),
                           "a chunk started at \(record.capturedAt), inside the pause \(pausedAt)...\(until)")
        }
        let after = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
        let micAfter = try XCTUnwrap(after.streams.first { $0.name == "microphone" })
        XCTAssertFalse(micAfter.paused)
        XCTAssertNil(micAfter.pausedUntil)
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
    }

    func testResumeEndsATimedPauseEarly() throws {
        let rig = try DaemonRig(checkInterval: 30)
        try rig.startAgent()
        let database = try rig.openDatabase()
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        let pause = try cli.run(["pause", "location", "--until", RFC3339.string(from: Date().addingTimeInterval(3_600))])
        XCTAssertEqual(pause.status, 0, pause.stderr)
        try waitUntil("location to stop", timeout: 20) { rig.agentLog.contains("location paused") }
        let fixes = try database.recordQueue.records(stream: .location).count
        XCTAssertEqual(try cli.run(["resume", "location"]).status, 0)
        try waitUntil("location records again", timeout: 40) { try database.recordQueue.records(stream: .location).count > fixes }
        let bad = try cli.run(["pause", "--for", "soon"])
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.stderr.contains("use a duration such as 90s"), bad.stderr)
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
    }
}
