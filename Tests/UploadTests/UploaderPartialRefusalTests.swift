import AgentCore
import Foundation
import TestRigs
import XCTest
@testable import Upload

/// Batches with bad records among good ones, against receivers that store part of what a
/// refused batch held, as real servers do: every good record must be stored exactly once
/// by the receiver, every bad one fail alone.
final class UploaderPartialRefusalTests: XCTestCase {
    /// 200 with accepted > 0 and rejected > 0, naming the refused records: the answer
    /// proves the others stored, so they are never sent again.
    func testAPartlyStoredBatchIsNotSentAgain() throws {
        let f = try UploadFixture(receiverArguments: ["--on-bad-record", "store-good"])
        f.upload.batchMaxRecords = 100
        let (good, bad) = try enqueueHealth(f, count: 100, badAt: [3, 40, 41, 77, 99])

        let report = f.makeUploader().syncNow()

        XCTAssertTrue(report.drainedAll, "\(report)")
        try assertStoredOnce(f, good: good, bad: bad, report: report)
        XCTAssertEqual(try f.receiver.stats().buffered_duplicates, 0)
        // The batch, then each refused record alone.
        XCTAssertEqual(try f.receiver.requests().map(\.records), [100, 1, 1, 1, 1, 1])
    }

    /// 200 with accepted 0 from a server that kept the records before the first bad one
    /// for its next good batch (the Ariata server): the named records go alone first, then
    /// the rest in one batch; no good record is in a second refused batch, so the server
    /// stores the kept ones only with that batch, and nothing the agent sent is stored twice.
    func testAServerThatKeptAPrefixStoresNoGoodRecordTwice() throws {
        let f = try UploadFixture(receiverArguments: ["--on-bad-record", "buffer-prefix"])
        f.upload.batchMaxRecords = 100
        let (good, bad) = try enqueueHealth(f, count: 100, badAt: [30, 31, 70])

        let report = f.makeUploader().syncNow()

        XCTAssertTrue(report.drainedAll, "\(report)")
        try assertStoredOnce(f, good: good, bad: bad, report: report, serverBuffered: 30)
        XCTAssertEqual(try f.receiver.requests().map(\.records), [100, 1, 1, 1, 97])
    }

    /// The same server answering 422: the named records still go alone first.
    func testAServerThatKeptAPrefixAndAnswered422() throws {
        let f = try UploadFixture(receiverArguments: ["--on-bad-record", "buffer-prefix", "--reject-status", "422"])
        f.upload.batchMaxRecords = 50
        let (good, bad) = try enqueueHealth(f, count: 120, badAt: [0, 10, 49, 50, 119])

        let report = f.makeUploader().syncNow()

        XCTAssertTrue(report.drainedAll, "\(report)")
        // Batch 1 (0-49): bad first, so nothing kept; batch 2 (50-99): bad first too;
        // batch 3 (100-119): the 19 before record 119 are kept and stored with its rest.
        try assertStoredOnce(f, good: good, bad: bad, report: report, serverBuffered: 19)
    }

    /// A server that keeps the prefix and names nothing (the answer the contract shows
    /// has no names): the batch is split in halves as before. Nothing is lost and the
    /// server's table keeps each record once; records it stored from its buffer can come
    /// again in a later half (its raw archive holds them twice), which no resend order
    /// can avoid without knowing where the bad record is.
    func testAServerThatKeptAPrefixWithoutNamesLosesNothing() throws {
        let f = try UploadFixture(receiverArguments: ["--on-bad-record", "buffer-prefix", "--unnamed-errors"])
        f.upload.batchMaxRecords = 100
        let (good, bad) = try enqueueHealth(f, count: 100, badAt: [30, 31, 70])

        let report = f.makeUploader().syncNow()

        XCTAssertTrue(report.drainedAll, "\(report)")
        let stored = try f.receiver.storedIDs(.health)
        XCTAssertEqual(stored.count, good.count, "the table keeps each record once")
        XCTAssertEqual(Set(stored), good)
        XCTAssertEqual(Set(try f.database.recordQueue.records(stream: .health, status: .failed).map { $0.id.uuidString.lowercased() }), bad)
        XCTAssertEqual(try f.database.recordQueue.count(stream: .health, status: .uploaded), good.count)
        let stats = try f.receiver.stats()
        print("partial-refusals unnamed prefix: requests=\(stats.requests) resent-after-stored=\(stats.duplicates) buffer-copies=\(stats.buffered_duplicates)")
    }

    /// A partial answer that does not say which records it refused proves no record
    /// stored: every record of the batch is sent again alone (nothing lost, nothing bad
    /// in a batch with good ones again); the ones the server had stored arrive a second
    /// time, once each, and the server keeps them once by id.
    func testAPartlyStoredBatchWithoutNamesIsSentAgainRecordByRecord() throws {
        let f = try UploadFixture(receiverArguments: ["--on-bad-record", "store-good", "--unnamed-errors"])
        f.upload.batchMaxRecords = 20
        let (good, bad) = try enqueueHealth(f, count: 20, badAt: [5, 12])

        let report = f.makeUploader().syncNow()

        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(Set(try f.receiver.storedIDs(.health)), good)
        XCTAssertEqual(Set(try f.database.recordQueue.records(stream: .health, status: .failed).map { $0.id.uuidString.lowercased() }), bad)
        XCTAssertEqual(try f.receiver.stats().duplicates, good.count, "each stored record sent once more")
        XCTAssertTrue(try f.receiver.storedCopies(.health).values.allSatisfy { $0 == 2 })
        XCTAssertEqual(try f.receiver.requests().map(\.records), [20] + Array(repeating: 1, count: 20))
    }

    /// Bad records spread through a large backlog (default refusing receiver): every good
    /// record stored once, every bad one failed, and the requests counted. The size can be
    /// raised to the fuzz case's with ARIATA_REFUSAL_RECORDS / ARIATA_REFUSAL_BAD.
    func testManyBadRecordsSpreadThroughABacklog() throws {
        for mode in ["refuse", "buffer-prefix"] {
            let environment = ProcessInfo.processInfo.environment
            let count = environment["ARIATA_REFUSAL_RECORDS"].flatMap(Int.init) ?? 2_000
            let badCount = environment["ARIATA_REFUSAL_BAD"].flatMap(Int.init) ?? 70
            let f = try UploadFixture(receiverArguments: ["--on-bad-record", mode, "--discard-payloads"])
            let (good, bad) = try enqueueHealth(f, count: count, badAt: Self.spread(badCount, over: count))

            let report = f.makeUploader().syncNow()

            XCTAssertTrue(report.drainedAll, "\(report)")
            XCTAssertEqual(try f.receiver.stats().duplicates, 0, mode)
            XCTAssertEqual(Set(try f.receiver.storedIDs(.health)), good, mode)
            XCTAssertEqual(try f.database.recordQueue.count(stream: .health, status: .failed), bad.count, mode)
            let requests = try f.receiver.requests()
            let refused = requests.filter { ($0.rejected ?? 0) > 0 || $0.status != 200 }.count
            // Each batch: itself, its bad records alone, the rest together.
            let batches = (count + f.upload.batchMaxRecords - 1) / f.upload.batchMaxRecords
            XCTAssertLessThanOrEqual(requests.count, 2 * batches + bad.count, mode)
            print("partial-refusals measure: mode=\(mode) records=\(count) bad=\(bad.count) requests=\(requests.count) "
                + "refused=\(refused) buffered_duplicates=\(try f.receiver.stats().buffered_duplicates)")
        }
    }

    // MARK: Helpers

    /// Enqueues `count` health records, those at `badAt` dated 1998 (the server refuses
    /// them); returns the good and the bad ids (lowercased).
    private func enqueueHealth(_ f: UploadFixture, count: Int, badAt: Set<Int>) throws -> (good: Set<String>, bad: Set<String>) {
        let now = Date()
        let records = try (0..<count).map { index -> NewRecord in
            guard badAt.contains(index) else {
                return try TestRecords.realistic(.health, at: now.addingTimeInterval(-Double(count - index)))
            }
            return try NewRecord(stream: .health, capturedAt: Date(timeIntervalSince1970: 900_000_000 + Double(index)),
                                 fields: ["timestamp": "1998-07-09T16:00:00.000Z", "metric_type": "heart_rate", "value": 61,
                                          "unit": "bpm", "metadata": ["source": "test-strap"]])
        }
        try f.database.recordQueue.enqueue(records, anchor: nil)
        var good = Set<String>(), bad = Set<String>()
        for (index, record) in records.enumerated() {
            let id = record.id.uuidString.lowercased()
            if badAt.contains(index) { bad.insert(id) } else { good.insert(id) }
        }
        return (good, bad)
    }

    /// `count` distinct positions below `total`, spread by a fixed multiplicative hash.
    static func spread(_ count: Int, over total: Int) -> Set<Int> {
        var positions = Set<Int>()
        var step: UInt64 = 1
        while positions.count < min(count, total) {
            positions.insert(Int((step &* 2_654_435_761) % UInt64(total)))
            step += 1
        }
        return positions
    }

    /// Every good record stored by the receiver exactly once (no id stored twice from
    /// what the agent sent), every bad one failed in the queue with the server's reason.
    /// `serverBuffered`: copies the receiver's own prefix buffer added (allowed).
    private func assertStoredOnce(_ f: UploadFixture, good: Set<String>, bad: Set<String>, report: SyncReport,
                                  serverBuffered: Int = 0, file: StaticString = #filePath, line: UInt = #line) throws {
        let stored = try f.receiver.storedIDs(.health)
        XCTAssertEqual(stored.count, good.count, file: file, line: line)
        XCTAssertEqual(Set(stored), good, "every good record stored", file: file, line: line)
        let stats = try f.receiver.stats()
        XCTAssertEqual(stats.duplicates, 0, "a good record the agent sent was stored twice", file: file, line: line)
        XCTAssertEqual(stats.buffered_duplicates, serverBuffered, "the server's own buffer", file: file, line: line)
        let copies = try f.receiver.storedCopies(.health)
        XCTAssertEqual(copies.values.reduce(0) { $0 + $1 - 1 }, serverBuffered, "\(copies)", file: file, line: line)
        XCTAssertEqual(report.recordsSent, good.count, file: file, line: line)
        XCTAssertEqual(report.recordsFailed, bad.count, file: file, line: line)
        let failed = try f.database.recordQueue.records(stream: .health, status: .failed)
        XCTAssertEqual(Set(failed.map { $0.id.uuidString.lowercased() }), bad, file: file, line: line)
        for record in failed {
            XCTAssertTrue(record.lastError?.contains("before 2000-01-01") ?? false, "\(record.lastError ?? "nil")", file: file, line: line)
        }
        XCTAssertEqual(try f.database.recordQueue.count(stream: .health, status: .uploaded), good.count, file: file, line: line)
        XCTAssertEqual(try f.database.recordQueue.count(stream: .health, status: .pending), 0, file: file, line: line)
    }
}
