import AgentCore
import Foundation
import Platform
import TestRigs
import XCTest
@testable import Upload

/// The uploader's own timer on a `VirtualScheduler` (docs/development.md, Driving time in a
/// test), against the real receiver: a failed stream is tried again when its backoff step
/// ends (not before, and not only at the next interval), and the interval counts from the
/// last run. Virtual time, so no wall-clock wait.
final class VirtualTimeUploaderTests: XCTestCase {
    func testRetriesFollowTheBackoffStepsAndCyclesTheInterval() throws {
        let f = try UploadFixture(receiverRunning: false)
        f.upload.interval = 300
        let scheduler = VirtualScheduler(wallClock: Date())
        let first = try f.enqueue(.location, count: 5)
        let uploader = f.makeUploader(scheduler: scheduler)
        uploader.start()
        defer { uploader.stop() }
        func failures() -> Int { uploader.schedule().streamFailures[.location] ?? 0 }

        // The start's cycle: nobody listens; the stream waits one step (30 s, no jitter).
        scheduler.advance(by: 0)
        XCTAssertEqual(failures(), 1)
        let firstRetry = try XCTUnwrap(uploader.schedule().streamRetryAt[.location])
        XCTAssertEqual(firstRetry.timeIntervalSince(scheduler.now()), 30, accuracy: 0.001)
        XCTAssertEqual(uploader.nextCycleAt, firstRetry, "the timer is brought forward to the retry, not left at 300 s")
        scheduler.advance(by: 29.9)
        XCTAssertEqual(failures(), 1, "no attempt before the 30 s step")
        scheduler.advance(by: 0.2)
        XCTAssertEqual(failures(), 2, "tried again at the end of the step")

        // The second step is 60 s; the receiver is up by then.
        try f.receiver.start()
        scheduler.advance(by: 59.7)
        XCTAssertEqual(try f.receiver.stats().requests, 0, "no attempt before the 60 s step")
        XCTAssertEqual(try f.ids(.location, status: .pending), Set(first))
        scheduler.advance(by: 0.3)
        XCTAssertEqual(try f.ids(.location, status: .uploaded), Set(first), "delivered at the end of the 60 s step")
        XCTAssertEqual(failures(), 0)
        XCTAssertEqual(uploader.liveness(), .healthy)

        // Then the regular interval, counted from that run.
        let delivered = scheduler.now()
        XCTAssertEqual(try XCTUnwrap(uploader.nextCycleAt).timeIntervalSince(delivered), 300, accuracy: 0.2)
        let second = try f.enqueue(.location, count: 3)
        scheduler.advance(by: 299.5)
        XCTAssertEqual(try f.ids(.location, status: .pending), Set(second), "nothing sent before the interval")
        scheduler.advance(by: 0.6)
        XCTAssertEqual(try f.ids(.location, status: .uploaded), Set(first + second), "sent at the interval")
        XCTAssertEqual(try f.receiver.stats().duplicates, 0)
    }

    /// A laptop suspended in the middle of a backoff: the timer fires once on resume, the
    /// suspend detector (reading the scheduler's boot and monotonic clocks) tells it was a
    /// suspend, and the backoff starts again from its first step (the network is likely
    /// another one now). A wall-clock jump of the same length is no suspend: the failures
    /// go on counting.
    func testASuspendResetsTheBackoffAndAClockJumpDoesNot() throws {
        let f = try UploadFixture(receiverRunning: false)
        f.upload.interval = 300
        let scheduler = VirtualScheduler(wallClock: Date())
        _ = try f.enqueue(.location, count: 5)
        let uploader = f.makeUploader(scheduler: scheduler)
        uploader.start()
        defer { uploader.stop() }
        func failures() -> Int { uploader.schedule().streamFailures[.location] ?? 0 }

        scheduler.advance(by: 0)
        scheduler.advance(by: 30)
        XCTAssertEqual(failures(), 2, "two failed attempts: the stream waits the 60 s step")

        scheduler.suspend(for: 3_600)
        XCTAssertEqual(failures(), 1, "after the suspend the backoff started again: one failure, not three")
        XCTAssertEqual(uploader.schedule().breakerTrips, 0, "and the breaker did not count the failures before it")
        let retry = try XCTUnwrap(uploader.schedule().streamRetryAt[.location])
        XCTAssertEqual(retry.timeIntervalSince(scheduler.now()), 30, accuracy: 0.001, "the first step again")

        scheduler.advance(by: 30)
        XCTAssertEqual(failures(), 2)
        scheduler.setWallClock(to: scheduler.now().addingTimeInterval(3_600))
        XCTAssertEqual(uploader.schedule().breakerTrips, 1,
                       "a clock jump fired the timer once, a third failure in a row: the breaker opened, nothing was reset")
    }
}
