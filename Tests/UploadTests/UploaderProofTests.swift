import AgentCore
import Foundation
import TestRigs
import XCTest
@testable import Upload

/// "A success is a success only when the server proves it": the real server's stream
/// routing, servers that answer 200 without storing, a 429 for the whole endpoint, and
/// waits that outlive a restart. Real receiver on loopback, real SQLite queue.
final class UploaderProofTests: XCTestCase {
    // MARK: Routing like the real server

    /// The receiver routes by wire name like the Ariata server: `health` is refused there,
    /// `healthkit` is taken. All three streams arrive.
    func testAllThreeStreamsAreDeliveredUnderTheirWireNames() throws {
        let f = try UploadFixture()
        let sent: [StreamName: Set<String>] = [
            .location: Set(try f.enqueue(.location, count: 5)),
            .microphone: Set(try f.enqueue(.microphone, count: 2)),
            .health: Set(try f.enqueue(.health, count: 7)),
        ]
        let report = f.makeUploader().syncNow()
        XCTAssertTrue(report.drainedAll, "\(report)")
        for (stream, ids) in sent {
            XCTAssertEqual(Set(try f.receiver.storedIDs(stream)), ids, "\(stream)")
        }
        XCTAssertEqual(Set(try f.receiver.requests().compactMap(\.stream)), ["location", "microphone", "healthkit"])
    }

    /// A server without the stream (an older server, another stream name) refuses every
    /// record of it with a 200. That is the stream's fault, not the records': they stay
    /// pending with no attempt spent, the stream pauses with a growing pause (E007), the
    /// other streams go on, and once the server takes the stream everything arrives once.
    func testAServerThatRefusesAWholeStreamLeavesItsRecordsPending() throws {
        let f = try UploadFixture()
        try f.receiver.configure(streams: ["location", "microphone"])
        let health = Set(try f.enqueue(.health, count: 5))
        let location = Set(try f.enqueue(.location, count: 3))
        let uploader = f.makeUploader()

        var report = uploader.runScheduledCycle()
        guard case .retryLater(let reason, .streamRefused, let until) = report.streams[.health]?.outcome else {
            return XCTFail("\(report)")
        }
        XCTAssertTrue(reason.contains("refuses every health record"), reason)
        XCTAssertTrue(reason.contains("\"healthkit\""), reason)
        XCTAssertEqual(until, f.clock.now().addingTimeInterval(300))
        XCTAssertEqual(Set(try f.receiver.storedIDs(.location)), location, "the other streams go on")
        let kept = try f.database.recordQueue.records(stream: .health)
        XCTAssertEqual(kept.count, 5)
        XCTAssertTrue(kept.allSatisfy { $0.status == .pending && $0.uploadAttempts == 0 }, "\(kept)")
        XCTAssertEqual(uploader.liveness().code, .streamRefused)
        XCTAssertEqual(try f.database.recordQueue.uploadStats().first { $0.stream == .health }?.lastErrorCode, .streamRefused)
        XCTAssertEqual(uploader.schedule().streamRefusedUntil[.health], until)

        // Paused: not even tried before its time; refused again, the pause doubles.
        let requests = try f.receiver.stats().requests
        f.clock.advance(by: 299)
        report = uploader.runScheduledCycle()
        XCTAssertEqual(report.streams[.health]?.outcome, .waiting(until: until))
        XCTAssertEqual(try f.receiver.stats().requests, requests)
        f.clock.advance(by: 1)
        _ = uploader.runScheduledCycle()
        XCTAssertEqual(uploader.schedule().streamRefusedUntil[.health], f.clock.now().addingTimeInterval(600))

        // The server gains the stream: after the pause everything arrives, exactly once.
        try f.receiver.configure(streams: ["location", "microphone", "healthkit"])
        f.clock.advance(by: 600)
        report = uploader.runScheduledCycle()
        XCTAssertEqual(report.streams[.health]?.outcome, .drained, "\(report)")
        XCTAssertEqual(Set(try f.receiver.storedIDs(.health)), health)
        XCTAssertEqual(try f.database.recordQueue.count(stream: .health, status: .uploaded), 5)
        XCTAssertEqual(try f.database.recordQueue.count(stream: .health, status: .failed), 0)
        XCTAssertEqual(uploader.liveness(), .healthy)
    }

    /// A whole batch of bad records at the head of the queue with good ones behind it is
    /// not a refused stream: the newest record, sent alone, is taken, so the refused ones
    /// really are bad and fail, and the rest is delivered.
    func testABatchOfOnlyBadRecordsIsToldApartFromARefusedStream() throws {
        let f = try UploadFixture()
        f.upload.batchMaxRecords = 4
        let poison = try (0..<4).map { _ in try UploadFixture.poisonLocation() }
        try f.database.recordQueue.enqueue(poison, anchor: nil)
        let good = Set(try f.enqueue(.location, count: 6))

        let report = f.makeUploader().syncNow()

        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(report.recordsFailed, 4)
        XCTAssertEqual(Set(try f.database.recordQueue.records(stream: .location, status: .failed).map(\.id)), Set(poison.map(\.id)))
        XCTAssertEqual(Set(try f.receiver.storedIDs(.location)), good)
    }

    // MARK: A lying server

    /// 200 with a web page, 200 with `{}`, 200 with fewer accepted than sent: none of them
    /// marks anything uploaded or spends an attempt; E006 says why; when the server answers
    /// properly, everything arrives exactly once.
    func testA200WithoutProofMarksNothing() throws {
        let f = try UploadFixture(receiverArguments: ["--fault", "lie=html", "--fault", "lie=json", "--fault", "lie=short"])
        let ids = Set(try f.enqueue(.location, count: 8))
        let uploader = f.makeUploader()

        let expected = ["with a web page", "JSON without the ingest answer", "accepted 7 and rejected 0 for 8 records"]
        for words in expected {
            let report = uploader.syncNow()
            guard case .retryLater(let reason, .notIngestEndpoint, _) = report.streams[.location]?.outcome else {
                return XCTFail("\(words): \(report)")
            }
            XCTAssertTrue(reason.contains(words), reason)
            XCTAssertEqual(try f.database.recordQueue.count(stream: .location, status: .uploaded), 0, words)
            XCTAssertEqual(try f.database.recordQueue.count(stream: .location, status: .pending), 8, words)
            XCTAssertTrue(try f.database.recordQueue.records(stream: .location).allSatisfy { $0.uploadAttempts == 0 })
            XCTAssertEqual(uploader.liveness().code, .notIngestEndpoint)
            XCTAssertEqual(try f.database.recordQueue.uploadStats().first?.lastErrorCode, .notIngestEndpoint)
        }
        XCTAssertEqual(try f.receiver.stats().stored(.location), 0, "the lies stored nothing")

        let report = uploader.syncNow()
        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(try f.receiver.storedIDs(.location).count, 8)
        XCTAssertEqual(Set(try f.receiver.storedIDs(.location)), ids)
        XCTAssertEqual(try f.receiver.stats().duplicates, 0)
        XCTAssertEqual(try f.database.recordQueue.count(stream: .location, status: .uploaded), 8)
    }

    // MARK: 429 for the whole endpoint

    /// A 429 to one stream holds every stream: the others are not sent until its
    /// Retry-After has passed.
    func testA429HoldsEveryStreamUntilItsRetryAfter() throws {
        // Streams go in name order: health first, and it is the one told to slow down.
        let f = try UploadFixture(receiverArguments: ["--fault", "status=429,retry_after=120,stream=healthkit"])
        try f.enqueue(.health, count: 3)
        try f.enqueue(.location, count: 3)
        try f.enqueue(.microphone, count: 1)
        let uploader = f.makeUploader()

        var report = uploader.runScheduledCycle()
        XCTAssertEqual(report.requests, 1)
        guard case .retryLater(_, .rateLimited, let until) = report.streams[.health]?.outcome else { return XCTFail("\(report)") }
        XCTAssertEqual(until, f.clock.now().addingTimeInterval(120))
        XCTAssertEqual(report.streams[.location]?.outcome, .notReached)
        XCTAssertEqual(report.streams[.microphone]?.outcome, .notReached)
        XCTAssertEqual(uploader.liveness().code, .rateLimited)
        XCTAssertEqual(try f.database.agentState.value(AgentStateKey.uploadRetryAt), RFC3339.string(from: until))

        f.clock.advance(by: 119)
        report = uploader.runScheduledCycle()
        XCTAssertEqual(report.skipped, .rateLimited(until: until))
        XCTAssertEqual(try f.receiver.stats().requests, 1, "no stream sends during the hold")

        f.clock.advance(by: 1)
        report = uploader.runScheduledCycle()
        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(try f.receiver.stats().stored(.health) + f.receiver.stats().stored(.location)
                       + f.receiver.stats().stored(.microphone), 7)
        XCTAssertNil(try f.database.agentState.value(AgentStateKey.uploadRetryAt))
    }

    // MARK: Waits that outlive a restart

    /// The breaker opened by a failing server, and a refused token, are read back by a
    /// new uploader on the same queue (a daemon restart): it does not send before its time.
    func testARestartKeepsTheBackoffTheBreakerAndTheTokenPause() throws {
        let f = try UploadFixture(receiverArguments: ["--fault", "status=503,times=forever"])
        try f.enqueue(.location, count: 2)
        try f.enqueue(.health, count: 2)
        try f.enqueue(.microphone, count: 1)
        _ = f.makeUploader().runScheduledCycle()
        let before = try f.receiver.stats().requests
        XCTAssertEqual(before, 3, "three failures open the breaker")

        let restarted = f.makeUploader()
        guard case .open(let until) = restarted.schedule().breaker else { return XCTFail("\(restarted.schedule())") }
        XCTAssertEqual(restarted.runScheduledCycle().skipped, .circuitOpen(until: until))
        XCTAssertEqual(try f.receiver.stats().requests, before, "no request before the persisted wait")
        XCTAssertEqual(restarted.liveness().code, .serverError)

        // After the wait the restarted uploader probes, and delivers once the server is well.
        try f.receiver.clearFaults()
        f.clock.set(until)
        XCTAssertTrue(restarted.runScheduledCycle().drainedAll)
        XCTAssertNil(try f.database.agentState.value(AgentStateKey.uploadMemory), "nothing left to remember")
        XCTAssertEqual(f.makeUploader().schedule().breaker, .closed)
    }

    func testARestartKeepsTheTokenPauseButANewTokenEndsIt() throws {
        let f = try UploadFixture(token: "good")
        f.server.token = Secret("revoked")
        try f.enqueue(.location, count: 2)
        _ = f.makeUploader().runScheduledCycle()
        let until = try XCTUnwrap(f.makeUploader().schedule().authPausedUntil, "read back after a restart")
        XCTAssertEqual(until, f.clock.now().addingTimeInterval(300))
        let restarted = f.makeUploader()
        XCTAssertEqual(restarted.runScheduledCycle().skipped, .authPaused(until: until))
        XCTAssertEqual(try f.receiver.stats().requests, 1)

        // `onboard` wrote a new token and the daemon restarted: the old pause is not its.
        f.server.token = Secret("good")
        let fixed = f.makeUploader()
        XCTAssertNil(fixed.schedule().authPausedUntil)
        XCTAssertNil(try f.database.agentState.value(AgentStateKey.uploadAuthPausedUntil), "status no longer shows the stale pause")
        XCTAssertTrue(fixed.runScheduledCycle().drainedAll)
    }

    /// The network's return forgets the backoff the outage caused, but not a 429's wait.
    func testTheNetworksReturnEndsTheBackoffButNotA429() throws {
        let f = try UploadFixture(receiverRunning: false)
        try f.enqueue(.location, count: 3)
        let uploader = f.makeUploader()
        _ = uploader.runScheduledCycle()
        XCTAssertNotNil(uploader.schedule().streamRetryAt[.location])

        try f.receiver.start()
        uploader.networkReturned("test: a default route appeared")
        XCTAssertTrue(uploader.schedule().streamRetryAt.isEmpty)
        XCTAssertTrue(uploader.runScheduledCycle().drainedAll, "sent at once, not after the backoff")

        try f.enqueue(.location, count: 1)
        try f.receiver.addFaults(["status=429,retry_after=600"])
        _ = uploader.runScheduledCycle()
        let hold = try XCTUnwrap(uploader.schedule().rateLimitedUntil)
        uploader.networkReturned("test: an address was added")
        XCTAssertEqual(uploader.schedule().rateLimitedUntil, hold, "the server's own wait stays")
        XCTAssertEqual(uploader.runScheduledCycle().skipped, .rateLimited(until: hold))
    }
}
