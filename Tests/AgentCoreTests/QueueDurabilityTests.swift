import AgentCore
import Foundation
import TestRigs
import XCTest

/// A capture that returned is on disk: every commit fsyncs the WAL before it returns
/// (README, "Durability"). GRDB turns a pool's connections to synchronous=NORMAL when it
/// switches on WAL, which silently made commits survive a kill but not a power cut; this
/// test fails if that comes back.
final class QueueDurabilityTests: XCTestCase {
    func testTheWriterCommitsWithSynchronousFull() throws {
        let dir = try TemporaryDirectory("durability")
        let path = dir.file("agent.sqlite")
        XCTAssertEqual(try SQLiteQueue(path: path).durability(), "full", "a new queue")
        XCTAssertEqual(try SQLiteQueue(path: path).durability(), "full", "an existing queue opened again")
    }
}
