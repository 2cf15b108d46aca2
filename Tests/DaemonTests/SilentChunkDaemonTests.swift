import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// `[microphone] upload_silent = false` in the real daemon, on the rig's ALSA feed: with a
/// threshold of 0 dBFS every chunk is "silent", so every one is dropped, and the drops show
/// in `status`, `status --json` (valid against docs/status.schema.json) and the metrics,
/// and the log says so once.
final class SilentChunkDaemonTests: XCTestCase {
    func testDroppedSilentChunksAreCountedInStatusJSONAndMetrics() throws {
        let rig = try DaemonRig(chunkSeconds: 5, overlapSeconds: 1, checkInterval: 1,
                                locationEnabled: false, microphoneConfig: "silence_threshold_db = 0\nupload_silent = false")
        try rig.startAgent()
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        var report: StatusReport?
        try waitUntil("two dropped chunks in status", timeout: 90) {
            report = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
            return (report?.streams.first { $0.name == "microphone" }?.silentChunksDropped ?? 0) >= 2
        }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)

        let json = try cli.run(["status", "--json"]).stdout
        let final = try StatusReport.decode(Data(json.utf8))
        let microphone = try XCTUnwrap(final.streams.first { $0.name == "microphone" })
        let dropped = try XCTUnwrap(microphone.silentChunksDropped)
        XCTAssertGreaterThanOrEqual(dropped, 2)
        XCTAssertEqual(microphone.pending + microphone.uploaded + microphone.failed, 0, "no chunk was stored")
        try StatusSchema.assertMatches(Data(json.utf8))

        XCTAssertTrue(try cli.run(["status"]).stdout
            .contains("microphone: \(dropped) silent chunks dropped at capture since the daemon started ([microphone] upload_silent = false)"))
        XCTAssertTrue(try cli.run(["status", "--prometheus"]).stdout
            .contains("ariata_agent_microphone_silent_chunks_dropped_total{stream=\"microphone\"} \(dropped)"))
        let notices = rig.agentLog.components(separatedBy: "silent chunks are dropped until sound returns").count - 1
        XCTAssertEqual(notices, 1, "one quiet spell, said once: \(rig.agentLog)")
    }
}
