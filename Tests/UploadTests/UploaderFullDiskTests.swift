import AgentCore
import Foundation
import TestRigs
import XCTest
@testable import Upload

/// `sync` (and the daemon's cycle) never sends what it could not then mark delivered: on a
/// disk full to the last byte the queue refuses the write that precedes each request, so
/// nothing goes out to be sent a second time later.
final class UploaderFullDiskTests: XCTestCase {
    func testNothingIsSentThatCouldNotBeMarkedDelivered() throws {
        let fs: SmallFilesystem
        do {
            fs = try SmallFilesystem.make(.tmpfs, megabytes: 24)
        } catch let error as CannotMount {
            throw XCTSkip(error.description)
        }
        let f = try UploadFixture(databasePath: fs.file("queue.sqlite"))
        let ids = Set(try f.enqueue(.location, count: 40))

        try fs.fillWithAnotherProgram()
        // Whatever room the WAL still had is used up: the queue now refuses every write.
        var refused = false
        for _ in 0..<50 where !refused {
            do { try f.enqueue(.location, count: 20) } catch { refused = true }
        }
        XCTAssertTrue(refused, "the disk is full for the queue")
        let pendingBefore = try f.database.recordQueue.count(stream: .location, status: .pending)

        let report = f.makeUploader().syncNow()
        guard case .storeError(let reason) = report.streams[.location]?.outcome else { return XCTFail("\(report)") }
        XCTAssertTrue(reason.contains("disk full") || reason.contains("E004"), reason)
        XCTAssertEqual(try f.receiver.stats().requests, 0, "nothing was sent")

        // Room again (the storage guard, or the user): everything goes, once.
        try FileManager.default.removeItem(atPath: fs.file("filler"))
        let delivered = f.makeUploader().syncNow()
        XCTAssertTrue(delivered.drainedAll, "\(delivered)")
        XCTAssertEqual(try f.database.recordQueue.count(stream: .location, status: .uploaded), pendingBefore)
        XCTAssertTrue(ids.isSubset(of: Set(try f.receiver.storedIDs(.location))))
        XCTAssertEqual(try f.receiver.stats().duplicates, 0)
    }
}
