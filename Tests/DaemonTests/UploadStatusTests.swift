import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// What `ariata-agent status` says about uploads the server refuses, with the real daemon:
/// a stream the server does not take (E007), a refused token fixed by SIGHUP (the E002
/// pause goes at once), and health lines refused as malformed (counted, not only logged).
final class UploadStatusTests: XCTestCase {
    private func status(_ cli: AgentCLI) throws -> StatusReport {
        let result = try cli.run(["status", "--json"])
        return try StatusReport.decode(Data(result.stdout.utf8))
    }

    func testStatusShowsARefusedStreamAFixedTokenAndMalformedLines() throws {
        let rig = try DaemonRig(checkInterval: 1)
        // A server whose device connection has no healthkit stream, and no stream switches
        // (an Ariata server would leave healthkit out of its verify answer, which switches
        // health off: ServerSwitchWholeDaemonTests), so health captures and is refused.
        try rig.receiver.configure(streams: ["location", "microphone"])
        try rig.receiver.setVerify(status: 404)
        try rig.startAgent()
        _ = try rig.openDatabase()
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)

        try rig.appendHeartRates([61, 62, 63])
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: rig.healthPath))
        handle.seekToEndOfFile()
        handle.write(Data("this is not a sample\n{\"hr\": \"fast\", \"timestamp\": \"2026-01-01T00:00:00Z\"}\n".utf8))
        try handle.close()

        var report = try status(cli)
        try waitUntil("status to show the refused stream and the malformed lines", timeout: 60) {
            report = try self.status(cli)
            let health = report.streams.first { $0.name == "health" }
            return health?.lastUploadErrorCode == "E007" && (health?.malformedLines ?? 0) >= 2
        }
        let health = try XCTUnwrap(report.streams.first { $0.name == "health" })
        XCTAssertEqual(health.pending, 3, "kept, not failed")
        XCTAssertEqual(health.failed, 0)
        XCTAssertEqual(health.malformedLines, 2)
        try waitUntil("the uploader's health to say why", timeout: 20) {
            report = try self.status(cli)
            return report.uploader.reason?.contains("refuses every health record") ?? false
        }
        XCTAssertTrue(report.warnings.contains { $0.contains("refuses every health record") }, "\(report.warnings)")
        let text = try cli.run(["status"], environment: ["NO_COLOR": "1"])
        XCTAssertTrue(text.stdout.contains("health: 2 malformed lines and 0 refused samples skipped since the daemon started"), text.stdout)
        XCTAssertEqual(text.status, 1, "a refused stream is a warning")

        // The server revokes the token: E002, a pause that `status` shows.
        try rig.receiver.configure(token: "a-new-token", streams: ["location", "microphone", "healthkit"])
        try waitUntil("the token pause in status", timeout: 60) { try self.status(cli).uploader.authPausedUntil != nil }

        // The user puts the new token in the config and reloads: the pause is gone at
        // once, and everything waiting (the health samples too) is delivered.
        let config = try String(contentsOfFile: rig.configPath, encoding: .utf8)
        try config.replacingOccurrences(of: "token = \"daemon-token\"", with: "token = \"a-new-token\"")
            .write(toFile: rig.configPath, atomically: true, encoding: .utf8)
        rig.agent?.signal(SIGHUP)
        try waitUntil("the reload", timeout: 30) { rig.agentLog.contains("reloading the configuration") }
        try waitUntil("the stale pause to leave status", timeout: 10) { try self.status(cli).uploader.authPausedUntil == nil }
        try waitUntil("the health samples at the receiver", timeout: 60) { try rig.receiver.stats().stored(.health) == 3 }
        // All well again: `status` says so with its exit status (0), for scripts.
        try waitUntil("status to exit 0", timeout: 60) { try cli.run(["status"]).status == 0 }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        XCTAssertFalse(rig.agentLog.contains("a-new-token"), "the token is never logged")
    }
}
