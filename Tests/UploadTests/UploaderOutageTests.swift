import AgentCore
import Foundation
import Platform
import TestRigs
import XCTest
@testable import Upload

/// Failures that are not the records' fault: an unreachable or failing endpoint, a
/// refused token, a server that never answers. Nothing may be lost or failed by them.
final class UploaderOutageTests: XCTestCase {
    /// Receiver down, then 500s, then a reset connection, then 429 with Retry-After,
    /// then up: the breaker's waits follow 30/60/120 s (jittered down by at most 20%),
    /// Retry-After wins, and in the end everything arrives once with no attempt spent.
    func testOutageSequenceDeliversEverythingAndFollowsTheSchedule() throws {
        let f = try UploadFixture(receiverRunning: false)
        let sent: [StreamName: Set<String>] = [
            .location: Set(try f.enqueue(.location, count: 60)),
            .microphone: Set(try f.enqueue(.microphone, count: 12, audioBytes: 20_000)),
            .health: Set(try f.enqueue(.health, count: 25)),
        ]
        let uploader = f.makeUploader()

        // 1. Nobody listens: every stream fails to connect (E001), the third failure opens the breaker.
        var report = uploader.runScheduledCycle()
        XCTAssertEqual(report.requests, 3)
        for stream in StreamName.allCases {
            guard case .retryLater(let reason, let code, _) = report.streams[stream]?.outcome else {
                return XCTFail("\(stream): \(report)")
            }
            XCTAssertEqual(code, .networkTimeout)
            XCTAssertTrue(reason.contains("cannot connect"), reason)
        }
        var until = try assertOpen(uploader, f, waitWithin: 24...30)
        XCTAssertEqual(uploader.liveness().code, .networkTimeout)

        // Before the breaker's time nothing is tried.
        f.clock.advance(by: 10)
        report = uploader.runScheduledCycle()
        XCTAssertEqual(report.skipped, .circuitOpen(until: until))

        // 2. The server is up but failing: the half-open probe (one small batch) gets a 500.
        try f.receiver.start()
        try f.receiver.addFaults(["status=500", "reset", "status=429,retry_after=45"])
        f.clock.set(until)
        report = uploader.runScheduledCycle()
        XCTAssertEqual(report.requests, 1, "one probe")
        XCTAssertEqual(uploader.schedule().breakerTrips, 2)
        until = try assertOpen(uploader, f, waitWithin: 48...60)
        XCTAssertEqual(uploader.liveness().code, .serverError)

        // 3. A reset connection: the next step, 120 s.
        f.clock.set(until)
        report = uploader.runScheduledCycle()
        XCTAssertEqual(report.requests, 1)
        until = try assertOpen(uploader, f, waitWithin: 96...120)

        // 4. 429 with Retry-After: 45 s, exactly, whatever the schedule says, for the
        //    whole endpoint (E008, its own code in health and status).
        f.clock.set(until)
        report = uploader.runScheduledCycle()
        XCTAssertEqual(report.requests, 1)
        until = try XCTUnwrap(uploader.schedule().rateLimitedUntil, "\(uploader.schedule())")
        XCTAssertEqual(until.timeIntervalSince(f.clock.now()), 45)
        XCTAssertEqual(uploader.liveness().code, .rateLimited)
        XCTAssertEqual(uploader.runScheduledCycle().skipped, .rateLimited(until: until))

        // 5. Up: the probe succeeds, the breaker closes and the cycle drains everything.
        f.clock.set(until)
        report = uploader.runScheduledCycle()
        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(uploader.schedule().breaker, .closed)
        XCTAssertEqual(uploader.liveness(), .healthy)

        for (stream, ids) in sent {
            let stored = try f.receiver.storedIDs(stream)
            XCTAssertEqual(stored.count, ids.count)
            XCTAssertEqual(Set(stored), ids)
        }
        XCTAssertEqual(try f.receiver.stats().duplicates, 0)
        let records = try f.allRecords()
        XCTAssertTrue(records.allSatisfy { $0.status == .uploaded }, "none failed by the outage")
        XCTAssertTrue(records.allSatisfy { $0.uploadAttempts == 0 }, "an outage spends no attempt")

        // The probes were small and all carried the same batch (same records, same X-Batch-Id).
        let probes = try f.receiver.requests().prefix(4)
        XCTAssertEqual(probes.map(\.statusText), ["500", "reset", "429", "200"])
        XCTAssertTrue(probes.allSatisfy { $0.records <= UploadTuning().probeMaxRecords })
        XCTAssertEqual(Set(probes.compactMap(\.batch_id)).count, 1, "a retried batch keeps its X-Batch-Id")
        XCTAssertEqual(Set(probes.map(\.record_ids)).count, 1)
    }

    /// Asserts the breaker is open for `waitWithin` seconds from now; returns its end.
    private func assertOpen(_ uploader: Uploader, _ f: UploadFixture, waitWithin range: ClosedRange<TimeInterval>,
                            line: UInt = #line) throws -> Date {
        guard case .open(let until) = uploader.schedule().breaker else {
            struct BreakerNotOpen: Error {}
            XCTFail("breaker not open: \(uploader.schedule())", line: line)
            throw BreakerNotOpen()
        }
        let wait = until.timeIntervalSince(f.clock.now())
        XCTAssertTrue(range.contains(wait), "waits \(wait) s, expected \(range)", line: line)
        return until
    }

    func testRetryAfterAsHTTPDateWins() throws {
        let f = try UploadFixture(receiverArguments: ["--fault", "status=503,retry_after_date=200"])
        try f.enqueue(.location, count: 3)
        // The receiver writes the date from its own clock: use the real one here too.
        let uploader = f.makeUploader(clock: SystemClock())
        let report = uploader.runScheduledCycle()
        guard case .retryLater(_, let code, let at) = report.streams[.location]?.outcome else {
            return XCTFail("\(report)")
        }
        XCTAssertEqual(code, .serverError)
        // An HTTP-date has whole seconds: 200 s, less the part of a second it lost.
        let wait = at.timeIntervalSinceNow
        XCTAssertTrue((195...201).contains(wait), "waits \(wait) s")
    }

    func testRefusedTokenPausesWithGrowingPausesAndResumesByItself() throws {
        let f = try UploadFixture(token: "the-right-token")
        f.server.token = Secret("a-revoked-token")
        let ids = Set(try f.enqueue(.location, count: 15))
        let uploader = f.makeUploader()

        var report = uploader.runScheduledCycle()
        guard case .unauthorized(_, let until) = report.streams[.location]?.outcome else { return XCTFail("\(report)") }
        XCTAssertEqual(until, f.clock.now().addingTimeInterval(300))
        XCTAssertEqual(uploader.schedule().authPausedUntil, until)
        XCTAssertEqual(uploader.liveness().code, .invalidToken)
        XCTAssertEqual(try f.database.agentState.value(AgentStateKey.uploadAuthPausedUntil), RFC3339.string(from: until))
        XCTAssertEqual(try f.database.recordQueue.uploadStats().first?.lastErrorCode, .invalidToken)

        // Paused: no request at all.
        f.clock.advance(by: 299)
        report = uploader.runScheduledCycle()
        XCTAssertEqual(report.skipped, .authPaused(until: until))
        XCTAssertEqual(try f.receiver.stats().requests, 1)

        // Refused again: the pause doubles.
        f.clock.advance(by: 1)
        report = uploader.runScheduledCycle()
        XCTAssertEqual(uploader.schedule().authPausedUntil, f.clock.now().addingTimeInterval(600))

        // Nothing was dropped or charged.
        let records = try f.database.recordQueue.records(stream: .location)
        XCTAssertTrue(records.allSatisfy { $0.status == .pending && $0.uploadAttempts == 0 })

        // The server side is fixed (it accepts the token again): after the pause, by itself.
        try f.receiver.configure(token: "a-revoked-token")
        f.clock.advance(by: 600)
        report = uploader.runScheduledCycle()
        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(Set(try f.receiver.storedIDs(.location)), ids)
        XCTAssertEqual(uploader.liveness(), .healthy)
        XCTAssertNil(try f.database.agentState.value(AgentStateKey.uploadAuthPausedUntil))
    }

    func testANewTokenEndsThePauseAtOnce() throws {
        let f = try UploadFixture(token: "the-right-token")
        f.server.token = Secret("a-typo")
        let ids = Set(try f.enqueue(.health, count: 5))
        let uploader = f.makeUploader()
        _ = uploader.runScheduledCycle()
        XCTAssertNotNil(uploader.schedule().authPausedUntil)

        var fixed = f.server
        fixed.token = Secret("the-right-token")
        uploader.updateServer(fixed, box: BoxConfig())
        XCTAssertNil(uploader.schedule().authPausedUntil)
        let report = uploader.runScheduledCycle()
        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(Set(try f.receiver.storedIDs(.health)), ids)
    }

    func testARequestThatIsNeverAnsweredEndsAtTheTimeOutAndIsRetried() throws {
        let f = try UploadFixture(receiverArguments: ["--fault", "hang=4"])
        f.server.requestTimeout = 1
        let ids = Set(try f.enqueue(.location, count: 5))
        let uploader = f.makeUploader()

        let began = Date()
        var report = uploader.runScheduledCycle()
        let took = Date().timeIntervalSince(began)
        guard case .retryLater(let reason, let code, let at) = report.streams[.location]?.outcome else {
            return XCTFail("\(report)")
        }
        XCTAssertEqual(code, .networkTimeout)
        XCTAssertTrue(reason.contains("time-out"), reason)
        XCTAssertGreaterThanOrEqual(took, 0.9, "ended by the 1 s time-out, not earlier")
        XCTAssertLessThan(took, 20)
        XCTAssertLessThanOrEqual(at.timeIntervalSince(f.clock.now()), 30)
        XCTAssertEqual(try f.database.recordQueue.records(stream: .location).map(\.uploadAttempts), [0, 0, 0, 0, 0])

        f.clock.advance(by: 30)
        report = uploader.runScheduledCycle()
        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(Set(try f.receiver.storedIDs(.location)), ids)
        // The hung request is logged once its 4 s are over: same batch id as the retry.
        try waitUntil("the hung request to be logged") { try f.receiver.requests().count == 2 }
        let batchIDs = try f.receiver.requests().map(\.batch_id)
        XCTAssertEqual(Set(batchIDs).count, 1, "\(batchIDs)")
    }

    func testStopAbortsARequestInFlight() throws {
        let f = try UploadFixture(receiverArguments: ["--fault", "hang"])
        f.server.requestTimeout = 120
        try f.enqueue(.location, count: 2)
        let uploader = f.makeUploader(clock: SystemClock())
        uploader.start()
        try waitUntil("the first cycle's request to reach the receiver") { try f.receiver.stats().in_flight == 1 }
        let began = Date()
        uploader.stop()
        XCTAssertLessThan(Date().timeIntervalSince(began), 30, "stop waited for the 120 s time-out")
        XCTAssertNil(uploader.nextCycleAt)
        XCTAssertEqual(try f.database.recordQueue.count(stream: .location, status: .pending), 2)
        XCTAssertEqual(try f.database.recordQueue.records(stream: .location).map(\.uploadAttempts), [0, 0])
    }

    /// A stop while the server, which has the whole request, takes 2 s to answer: the stop
    /// waits for the answer (`CurlTransport.answerGrace`) and marks the batch delivered,
    /// rather than abandon it to be sent a second time at the next start.
    func testStopWaitsForTheAnswerToARequestSentWhole() throws {
        let f = try UploadFixture(receiverArguments: ["--fault", "slow=2"])
        let ids = Set(try f.enqueue(.location, count: 2))
        let uploader = f.makeUploader(clock: SystemClock())
        uploader.start()
        try waitUntil("the first cycle's request to reach the receiver") { try f.receiver.stats().in_flight == 1 }
        uploader.stop()
        XCTAssertEqual(try f.database.recordQueue.count(stream: .location, status: .pending), 0, "the answer was waited for")
        XCTAssertEqual(Set(try f.receiver.storedIDs(.location)), ids)
        XCTAssertEqual(try f.receiver.requests().count, 1)
    }

    func testTheTimerRunsCyclesAndBringsARetryForward() throws {
        let f = try UploadFixture(receiverArguments: ["--fault", "status=503"])
        f.upload.interval = 3_600
        f.tuning.backoff = .constant(1)
        let ids = Set(try f.enqueue(.health, count: 6))
        let uploader = f.makeUploader(clock: SystemClock())
        uploader.start()
        defer { uploader.stop() }
        // First cycle at start gets the 503; the retry 1 s later (not an hour) delivers.
        try waitUntil("the retry to deliver", timeout: 30) { try f.receiver.storedIDs(.health).count == ids.count }
        XCTAssertEqual(try f.receiver.requests().map(\.statusText), ["503", "200"])
        XCTAssertEqual(Set(try f.receiver.storedIDs(.health)), ids)
        let next = try XCTUnwrap(uploader.nextCycleAt)
        XCTAssertGreaterThan(next.timeIntervalSinceNow, 3_000, "back to the regular interval")
    }
}
