import AgentCore
import Foundation
import TestRigs
import XCTest

/// A 300 s chunk (what onboarding proposes on a Virtues server) killed 20 s in: the
/// audio journal gives back what was captured up to the kill, so a long chunk costs a kill
/// no more than a 30 s one (docs/streams/microphone.md, "Chunk length per server").
final class LongChunkKillTests: XCTestCase {
    func testAKillHalfwayThroughA300SecondChunkLosesOnlyTheMomentOfTheKill() throws {
        let rig = try DaemonRig(chunkSeconds: 300, overlapSeconds: 2, uploadInterval: 300, checkInterval: 2,
                                locationEnabled: false)
        try rig.startAgent()
        let journal = rig.databasePath + ".audio-journal"
        try waitUntil("the chunk's journal", timeout: 20) {
            ((try? FileManager.default.contentsOfDirectory(atPath: journal)) ?? []).contains { $0.hasSuffix(".ogg") }
        }
        Thread.sleep(forTimeInterval: 20)
        let agent = try XCTUnwrap(rig.agent)
        let killed = Date()
        agent.signal(SIGKILL)
        XCTAssertEqual(agent.wait(timeout: 10), SIGKILL)

        try rig.startAgent()
        let database = try rig.openDatabase()
        try waitUntil("the recovered chunk", timeout: 30) { try database.recordQueue.records(stream: .microphone).count == 1 }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        let record = try XCTUnwrap(try database.recordQueue.records(stream: .microphone).first)
        let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: record.payload) as? [String: Any])
        let start = try XCTUnwrap((fields["timestamp_start"] as? String).flatMap(RFC3339.date(from:)))
        let duration = try XCTUnwrap(fields["duration"] as? Double)
        let audio = try XCTUnwrap(Data(base64Encoded: fields["audio_data"] as? String ?? ""))
        let lost = killed.timeIntervalSince(start) - duration
        print(String(format: "measured: killed %.1f s into a 300 s chunk: recovered %.2f s of audio (%d bytes); lost %.2f s",
                     killed.timeIntervalSince(start), duration, audio.count, lost))
        XCTAssertGreaterThan(duration, 17, "what was captured before the kill is kept")
        XCTAssertLessThan(lost, 3, "only the audio not yet read from the device (up to 2 s) and the unfinished frame")
        XCTAssertTrue(audio.starts(with: Data("OggS".utf8)), "a complete Ogg file")
        XCTAssertGreaterThan(Double(audio.count), duration * 1_500, "about 2,000 bytes a second at 16 kbit/s")
    }
}
