import AgentCore
import Foundation
import TestRigs
import XCTest

/// `purge` asks on a terminal (a real one, through pexpect) and does what the answer says.
final class PurgeCommandTests: XCTestCase {
    func testATerminalIsAskedAndANoKeepsEverything() throws {
        let dir = try TemporaryDirectory("purge-cli")
        let cli = try AgentCLI.writeConfig(in: dir.path)
        let database = try AgentDatabase(path: dir.file("agent.sqlite"))
        let t0 = Date().addingTimeInterval(-86_400)
        try database.recordQueue.enqueue((0..<12).map { i in
            NewRecord(stream: .health, capturedAt: t0.addingTimeInterval(Double(i) * 60), payload: Data("{\"hr\":\(60 + i)}".utf8))
        }, anchor: nil)
        let binary = try BuildProducts.executable("ariata-agent")
        let command = [binary, "purge", "health", "--pending", "--config", cli.configPath]

        let declined = try PexpectRig.run(command: command, script: """
            expect("Delete 12 health pending records (")
            expect("Pending records were never uploaded: they are lost for good. [y/N] ")
            child.sendline("n")
            expect("nothing deleted")
            finish()
            """, directory: dir.path, environment: ["TERM": "xterm"])
        XCTAssertEqual(declined.status, 1, declined.log + declined.transcript)
        XCTAssertEqual(try database.recordQueue.records(stream: .health).count, 12)

        let accepted = try PexpectRig.run(command: command, script: """
            expect("[y/N] ")
            child.sendline("y")
            expect("deleted 12 health pending records")
            finish()
            """, directory: dir.path, environment: ["TERM": "xterm"])
        XCTAssertEqual(accepted.status, 0, accepted.log + accepted.transcript)
        XCTAssertEqual(try database.recordQueue.records(stream: .health).count, 0)

        let nothing = try cli.run(["purge", "--yes"])
        XCTAssertEqual(nothing.status, 0)
        XCTAssertTrue(nothing.stdout.hasPrefix("nothing to delete"), nothing.stdout)
        let bad = try cli.run(["purge", "--before", "last week", "--yes"])
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.stderr.contains("--before last week: use an RFC 3339 time"), bad.stderr)
    }
}
