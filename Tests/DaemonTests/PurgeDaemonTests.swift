import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// `ariata-agent purge` while the real daemon captures and uploads.
final class PurgeDaemonTests: XCTestCase {
    func testPurgeWhileTheDaemonWrites() throws {
        let rig = try DaemonRig(chunkSeconds: 5, overlapSeconds: 0, checkInterval: 1)
        try rig.startAgent()
        let database = try rig.openDatabase()
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        try waitUntil("audio and fixes in the queue", timeout: 60) {
            try database.recordQueue.records(stream: .microphone).count >= 3 && database.recordQueue.records(stream: .location).count >= 5
        }

        // Without a terminal and without --yes nothing goes.
        let refused = try cli.run(["purge", "microphone"])
        XCTAssertEqual(refused.status, 1, refused.stdout + refused.stderr)
        XCTAssertTrue(refused.stderr.contains("add --yes"), refused.stderr)
        XCTAssertFalse(try database.recordQueue.records(stream: .microphone).isEmpty)

        // Everything captured up to a moment ago, while the daemon goes on capturing and
        // uploading. The moment lies further back than a chunk and a fix can wait to be
        // written (a 5 s chunk and its 2 s read, a 2 s sampling interval), so every record
        // captured before it is in the queue already when the test counts them.
        let cut = Date().addingTimeInterval(-8)
        let cutText = RFC3339.string(from: cut)
        let expected = try database.recordQueue.records(stream: .microphone).filter { $0.capturedAt < cut }.count
        let expectedFixes = try database.recordQueue.records(stream: .location).filter { $0.capturedAt < cut }.count
        let purge = try cli.run(["purge", "microphone", "--before", cutText, "--yes"])
        XCTAssertEqual(purge.status, 0, purge.stderr)
        XCTAssertTrue(purge.stdout.hasPrefix("deleted \(expected) microphone records captured before"), purge.stdout)
        let purgeFixes = try cli.run(["purge", "location", "--before", cutText, "--yes"])
        XCTAssertTrue(purgeFixes.stdout.hasPrefix("deleted \(expectedFixes) location records"), purgeFixes.stdout)

        XCTAssertTrue(try database.recordQueue.records(stream: .microphone).allSatisfy { $0.capturedAt >= cut })
        XCTAssertTrue(try database.recordQueue.records(stream: .location).allSatisfy { $0.capturedAt >= cut })
        let chunks = try database.recordQueue.records(stream: .microphone).count
        try waitUntil("the daemon to capture on", timeout: 30) { try database.recordQueue.records(stream: .microphone).count > chunks }
        XCTAssertEqual(try database.integrityCheck(), "ok")

        let report = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
        let purgeEvent = try XCTUnwrap(report.database.lastPurge)
        XCTAssertTrue(purgeEvent.message.hasPrefix("deleted \(expectedFixes) location records"), purgeEvent.message)
        XCTAssertTrue(report.daemon.running)
        XCTAssertTrue(try cli.run(["status"]).stdout.contains("purged "))
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        XCTAssertFalse(rig.agentLog.contains("error"), rig.agentLog)
    }
}
