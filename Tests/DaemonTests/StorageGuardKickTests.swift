import AgentCore
@testable import Daemon
import Foundation
import Logging
import Platform
import TestRigs
import XCTest

/// The storage guard's kick (a pass soon after a write failed for space) on a
/// `VirtualScheduler`: it runs off the failing thread, at most once a second, coalescing
/// requests, and not after `stop()`. A real queue and guard; the pass is seen by what it
/// deletes (uploaded records above a cap of one byte).
final class StorageGuardKickTests: XCTestCase {
    func testAKickRunsOnePassForManyRequestsAndAtMostOnceASecond() throws {
        let dir = try TemporaryDirectory("storage-kick")
        let scheduler = VirtualScheduler(wallClock: Date())
        let database = try AgentDatabase(path: dir.file("agent.sqlite"), clock: scheduler)
        let storageGuard = StorageGuard(database: database, limits: StorageLimits(minFreeBytes: 0, maxQueueBytes: 1),
                                        clock: scheduler, logger: Logger(label: "test"))
        let kick = StorageGuardKick(storageGuard, scheduler: scheduler)
        func addUploaded(_ count: Int) throws {
            try database.recordQueue.enqueue((0..<count).map { _ in TestRecords.sized(.location, bytes: 1_000, at: scheduler.now()) }, anchor: nil)
            try database.recordQueue.markDelivered(database.recordQueue.records(stream: .location, status: .pending).map(\.seq))
        }
        func uploaded() throws -> Int { try database.recordQueue.count(stream: .location, status: .uploaded) }

        try addUploaded(3)
        kick.request()
        XCTAssertEqual(try uploaded(), 3, "the pass does not run on the requesting thread")
        XCTAssertEqual(scheduler.advance(by: 0), 1, "the first request's pass runs at once")
        XCTAssertEqual(try uploaded(), 0, "the pass deleted the uploaded records above the cap")

        try addUploaded(3)
        kick.request()
        kick.request()
        kick.request()
        XCTAssertEqual(scheduler.advance(by: 0.9), 0, "no second pass within a second of the first")
        XCTAssertEqual(try uploaded(), 3)
        XCTAssertEqual(scheduler.advance(by: 0.2), 1, "one pass for three requests, a second after the first")
        XCTAssertEqual(try uploaded(), 0)

        try addUploaded(2)
        kick.request()
        kick.stop()
        XCTAssertEqual(scheduler.advance(by: 5), 0, "a pass asked for before stop() does not run after it")
        XCTAssertEqual(try uploaded(), 2)
        kick.request()
        XCTAssertEqual(scheduler.advance(by: 5), 0, "nor one asked for while stopped")
        kick.resume()
        kick.request()
        XCTAssertEqual(scheduler.advance(by: 0), 1, "resumed, it runs again")
        XCTAssertEqual(try uploaded(), 0)
    }
}
