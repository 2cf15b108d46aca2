import AgentCore
import Foundation
import TestRigs
import XCTest

/// The real thing: a child process enqueues in a loop and is killed with SIGKILL at
/// random moments. Every enqueue that returned before the kill must be in the database,
/// and the database must pass its integrity check.
final class CrashSafetyTests: XCTestCase {
    func testEveryAcknowledgedEnqueueSurvivesSIGKILL() throws {
        let dir = try TemporaryDirectory("crash")
        let db = dir.file("agent.sqlite")
        let writer = try BuildProducts.executable("ariata-test-helper")
        var generator = SystemRandomNumberGenerator()
        var acknowledged = Set<UUID>()

        for round in 1...20 {
            let child = try ChildProcess(writer, ["crash-writer", db], name: "writer\(round)", logDirectory: dir.path)
            // Let it get going, then kill it somewhere in the middle of its work.
            try waitUntil("round \(round) to enqueue something", timeout: 30) { child.stdout().count > 37 * 3 }
            usleep(UInt32.random(in: 0...150_000, using: &generator))
            child.signal(SIGKILL)
            XCTAssertNotNil(child.wait(timeout: 10), "the writer did not die")

            let ids = child.stdout().split(separator: "\n").filter { $0.count == 36 }.compactMap { UUID(uuidString: String($0)) }
            XCTAssertFalse(ids.isEmpty)
            acknowledged.formUnion(ids)

            let database = try AgentDatabase(path: db)
            XCTAssertEqual(try database.integrityCheck(), "ok", "round \(round)")
            let stored = Set(try database.recordQueue.records(stream: .location).map(\.id) + database.recordQueue.records(stream: .microphone).map(\.id))
            let lost = acknowledged.subtracting(stored)
            XCTAssertTrue(lost.isEmpty, "round \(round): \(lost.count) acknowledged records missing")
        }
        XCTAssertGreaterThan(acknowledged.count, 20)
    }
}
