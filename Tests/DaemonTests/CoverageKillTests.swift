import AgentCore
import Foundation
import TestRigs
import XCTest

/// The real daemon killed (SIGKILL, as a crash or the OOM killer would, and as a power cut
/// looks to the next start) and started again: the coverage ledger shows the time between
/// as `lost`, from the microphone's last chunk written to the restart, the clean stop after
/// as `stopped`, and `ariata-agent coverage --json` prints it (docs/operations.md, "Coverage").
final class CoverageKillTests: XCTestCase {
    func testAKillIsALostGapFromTheLastChunkToTheRestart() throws {
        let rig = try DaemonRig(chunkSeconds: 5, overlapSeconds: 1, uploadInterval: 300, checkInterval: 2, locationEnabled: false)
        try rig.startAgent()
        let database = try rig.openDatabase()
        try waitUntil("two chunks", timeout: 30) { try database.recordQueue.count(stream: .microphone, status: .pending) >= 2 }
        let agent = try XCTUnwrap(rig.agent)
        agent.signal(SIGKILL)
        XCTAssertEqual(agent.wait(timeout: 10), SIGKILL)
        let killed = Date()
        let lastChunk = try XCTUnwrap(try database.recordQueue.lastCapture(stream: .microphone))
        Thread.sleep(forTimeInterval: 3)

        let restarted = Date()
        try rig.startAgent()
        var lost: CoverageSpan?
        try waitUntil("the lost span", timeout: 30) {
            lost = try database.coverage.spans([.microphone], from: killed.addingTimeInterval(-60), to: Date().addingTimeInterval(60))
                .first { $0.state == .lost }
            return lost != nil
        }
        let gap = try XCTUnwrap(lost)
        // The last chunk began at `lastChunk` and was written at its end, 5 s later.
        XCTAssertGreaterThanOrEqual(gap.start, lastChunk, "not before the last chunk")
        XCTAssertLessThanOrEqual(gap.start, killed, "from the last chunk written, before the kill")
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(gap.end), restarted, "to the restart")
        XCTAssertLessThan(try XCTUnwrap(gap.end), restarted.addingTimeInterval(20))
        try waitUntil("capture again", timeout: 30) {
            try database.coverage.spans([.microphone], from: restarted, to: Date().addingTimeInterval(60)).last?.state == .captured
        }
        XCTAssertEqual(rig.stopAgent(), 0)
        XCTAssertEqual(try database.coverage.spans([.microphone], from: restarted, to: Date().addingTimeInterval(60)).last?.state, .stopped,
                       "a clean stop is its own span, not lost")

        // The command, on the real file.
        let binary = try BuildProducts.executable("ariata-agent")
        let child = try ChildProcess(binary, ["coverage", "--json", "--stream", "microphone", "--config", rig.configPath],
                                     name: "coverage", logDirectory: rig.directory.path, environment: [:])
        XCTAssertEqual(child.wait(timeout: 30), 0, child.stderr())
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(child.stdout().utf8)) as? [String: Any])
        let stream = try XCTUnwrap((json["streams"] as? [[String: Any]])?.first)
        let states = (stream["spans"] as? [[String: Any]] ?? []).compactMap { $0["state"] as? String }
        // Around midnight the day may begin after the kill; the lost span is in it otherwise.
        if Calendar.current.isDate(killed, inSameDayAs: Date()) {
            XCTAssertTrue(states.contains("lost"), "\(states)")
        }
        XCTAssertEqual(states.last, "stopped")
    }
}
