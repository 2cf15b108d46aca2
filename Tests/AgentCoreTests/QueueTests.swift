import AgentCore
import Foundation
import Platform
import TestRigs
import XCTest

final class QueueTests: XCTestCase {
    var dir: TemporaryDirectory!
    var clock: ManualClock!
    var database: AgentDatabase!

    override func setUpWithError() throws {
        dir = try TemporaryDirectory("queue")
        clock = ManualClock()
        database = try AgentDatabase(path: dir.file("agent.sqlite"), clock: clock)
    }

    func record(_ stream: StreamName, bytes: Int = 100, at offset: TimeInterval = 0) -> NewRecord {
        TestRecords.sized(stream, bytes: bytes, at: clock.now().addingTimeInterval(offset))
    }

    func testRoundTripKeepsIdTimePayloadAndOrder() throws {
        let first = try TestRecords.fix(at: clock.now())
        let second = record(.location, at: 10)
        try database.recordQueue.enqueue(first)
        try database.recordQueue.enqueue(second)

        let batch = try database.recordQueue.pendingBatch(stream: .location, maxCount: 10, maxBytes: 1_000_000)
        XCTAssertEqual(batch.map(\.id), [first.id, second.id])
        XCTAssertEqual(batch[0].payload, first.payload)
        XCTAssertEqual(batch[0].capturedAt.timeIntervalSince1970, first.capturedAt.timeIntervalSince1970, accuracy: 0.000_1)
        XCTAssertEqual(batch.map(\.status), [.pending, .pending])
        XCTAssertLessThan(batch[0].seq, batch[1].seq)
        let object = try JSONSerialization.jsonObject(with: batch[0].payload) as? [String: Any]
        XCTAssertEqual(object?["id"] as? String, first.id.uuidString.lowercased())
        XCTAssertEqual(try database.recordQueue.pendingBatch(stream: .microphone, maxCount: 10, maxBytes: 1_000_000), [])
    }

    func testBatchIsBoundedByCountAndByBytes() throws {
        for _ in 0..<10 { try database.recordQueue.enqueue(record(.microphone, bytes: 1_000)) }
        XCTAssertEqual(try database.recordQueue.pendingBatch(stream: .microphone, maxCount: 4, maxBytes: 1_000_000).count, 4)
        XCTAssertEqual(try database.recordQueue.pendingBatch(stream: .microphone, maxCount: 100, maxBytes: 3_500).count, 3)
        XCTAssertEqual(try database.recordQueue.pendingBatch(stream: .microphone, maxCount: 100, maxBytes: 3_000).count, 3)
        // A record larger than the byte bound still goes, alone, so it cannot block the stream.
        XCTAssertEqual(try database.recordQueue.pendingBatch(stream: .microphone, maxCount: 100, maxBytes: 10).count, 1)
    }

    func testMarkUploadedTakesRecordsOutOfPending() throws {
        for _ in 0..<5 { try database.recordQueue.enqueue(record(.health)) }
        let batch = try database.recordQueue.pendingBatch(stream: .health, maxCount: 3, maxBytes: 1_000_000)
        try database.recordQueue.markDelivered(batch.map(\.seq))
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .uploaded), 3)
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .pending), 2)
        let next = try database.recordQueue.pendingBatch(stream: .health, maxCount: 10, maxBytes: 1_000_000)
        XCTAssertEqual(next.count, 2)
        XCTAssertTrue(Set(next.map(\.seq)).isDisjoint(with: batch.map(\.seq)))
    }

    func testFifthFailedAttemptFailsTheRecordButNoteAttemptNeverDoes() throws {
        try database.recordQueue.enqueue(record(.location))
        try database.recordQueue.enqueue(record(.location))
        let seqs = try database.recordQueue.pendingBatch(stream: .location, maxCount: 10, maxBytes: 1_000_000).map(\.seq)
        for attempt in 1...4 {
            try database.recordQueue.recordFailedAttempt([seqs[0]], error: "422 attempt \(attempt)")
            XCTAssertEqual(try database.recordQueue.records(stream: .location, status: .pending).first?.uploadAttempts, attempt)
        }
        for _ in 0..<20 { try database.recordQueue.noteAttempt([seqs[1]], error: "E001 network time-out") }
        try database.recordQueue.recordFailedAttempt([seqs[0]], error: "422 attempt 5")

        let failed = try database.recordQueue.records(stream: .location, status: .failed)
        XCTAssertEqual(failed.map(\.seq), [seqs[0]])
        XCTAssertEqual(failed.first?.uploadAttempts, 5)
        XCTAssertEqual(failed.first?.lastError, "422 attempt 5")
        let pending = try database.recordQueue.records(stream: .location, status: .pending)
        XCTAssertEqual(pending.map(\.seq), [seqs[1]])
        XCTAssertEqual(pending.first?.uploadAttempts, 0)
        XCTAssertEqual(pending.first?.lastError, "E001 network time-out")
        XCTAssertNotNil(pending.first?.lastAttemptAt)
    }

    func testMarkFailedAndCountsPerStreamAndStatus() throws {
        for _ in 0..<3 { try database.recordQueue.enqueue(record(.location, bytes: 50)) }
        for _ in 0..<2 { try database.recordQueue.enqueue(record(.microphone, bytes: 1_000)) }
        let seqs = try database.recordQueue.pendingBatch(stream: .location, maxCount: 10, maxBytes: 1_000_000).map(\.seq)
        try database.recordQueue.markFailed([seqs[0]], error: "server rejected: latitude missing")
        try database.recordQueue.markDelivered([seqs[1]])

        let counts = try database.recordQueue.counts()
        func n(_ s: StreamName, _ st: RecordStatus) -> Int? { counts.first { $0.stream == s && $0.status == st }?.records }
        XCTAssertEqual(n(.location, .pending), 1)
        XCTAssertEqual(n(.location, .failed), 1)
        XCTAssertEqual(n(.location, .uploaded), 1)
        XCTAssertEqual(n(.microphone, .pending), 2)
        XCTAssertEqual(counts.first { $0.stream == .microphone }?.bytes, 2_000)
        XCTAssertEqual(try database.recordQueue.streamsWithPending(), [.location, .microphone])
        // Marking twice, or marking a record that is no longer pending, changes nothing.
        try database.recordQueue.markDelivered([seqs[0], seqs[1]])
        XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .failed), 1)
        XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .uploaded), 1)
    }

    func testOldestPendingAge() throws {
        XCTAssertNil(try database.recordQueue.oldestPendingAge(stream: .location))
        try database.recordQueue.enqueue(record(.location, at: -120))
        try database.recordQueue.enqueue(record(.location, at: -30))
        clock.advance(by: 60)
        XCTAssertEqual(try XCTUnwrap(database.recordQueue.oldestPendingAge(stream: .location)), 180, accuracy: 0.001)
        try database.recordQueue.markDelivered(try database.recordQueue.pendingBatch(stream: .location, maxCount: 1, maxBytes: 1_000_000).map(\.seq))
        XCTAssertEqual(try XCTUnwrap(database.recordQueue.oldestPendingAge(stream: .location)), 90, accuracy: 0.001)
    }

    func testRetentionDeletesUploadedAndFailedAfterThreeDaysAndNeverPending() throws {
        for _ in 0..<6 { try database.recordQueue.enqueue(record(.health)) }
        let seqs = try database.recordQueue.pendingBatch(stream: .health, maxCount: 10, maxBytes: 1_000_000).map(\.seq)
        try database.recordQueue.markDelivered([seqs[0], seqs[1]])
        try database.recordQueue.markFailed([seqs[2]], error: "bad")
        let policy = RetentionPolicy()

        clock.advance(by: 2 * 86_400)
        try database.recordQueue.markDelivered([seqs[3]])         // uploaded two days later than the others
        XCTAssertEqual(try database.housekeeping.applyRetention(policy), 0)

        clock.advance(by: 86_400 + 1)            // 3 days + 1 s after the first marks
        XCTAssertEqual(try database.housekeeping.applyRetention(policy), 3)
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .uploaded), 1)
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .failed), 0)
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .pending), 2)

        clock.advance(by: 365 * 86_400)          // pending records are never aged out
        try database.housekeeping.applyRetention(policy)
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .pending), 2)
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .uploaded), 0)
    }

    func testSchemaVersionIsRecordedAndANewerDatabaseIsRefused() throws {
        let path = dir.file("agent.sqlite")
        XCTAssertEqual(try sqlite3Output(path, "PRAGMA user_version;"), "6")
        XCTAssertEqual(try sqlite3Output(path, "PRAGMA page_size;"), "1024", "a new queue has 1 KiB pages")
        XCTAssertEqual(try sqlite3Output(path, "PRAGMA journal_mode;"), "wal")
        // Reopening an up-to-date database migrates nothing and keeps the data.
        try database.recordQueue.enqueue(record(.location))
        database = nil
        let reopened = try AgentDatabase(path: path, clock: clock)
        XCTAssertEqual(try reopened.recordQueue.count(stream: .location, status: .pending), 1)

        _ = try sqlite3Output(path, "PRAGMA user_version = 99;")
        XCTAssertThrowsError(try AgentDatabase(path: path)) { error in
            XCTAssertEqual(error as? QueueError, .schemaTooNew(found: 99, known: 6))
            XCTAssertTrue("\(error)".contains("newer ariata-agent"))
        }
    }

    func testAnchorIsWrittenWithItsRecordsInOneTransaction() throws {
        let anchor = SourceAnchor(source: "hr.jsonl", device: 2049, inode: 77, offset: 4096, line: 12, extra: "{\"h\":1}")
        try database.recordQueue.enqueue([record(.health), record(.health)], anchor: anchor)
        XCTAssertEqual(try database.recordQueue.anchor(for: "hr.jsonl"), anchor)

        // A batch that fails (duplicate record id) leaves neither its records nor its anchor.
        let dup = record(.health)
        try database.recordQueue.enqueue(dup)
        var moved = anchor
        moved.offset = 9_999
        XCTAssertThrowsError(try database.recordQueue.enqueue([record(.health), dup], anchor: moved))
        XCTAssertEqual(try database.recordQueue.anchor(for: "hr.jsonl"), anchor)
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .pending), 3)
    }

    func testConcurrentReaderSeesConsistentCountsWhileTheWriterInserts() throws {
        let path = dir.file("agent.sqlite")
        let total = 2_000
        let writer = Thread { [database, clock] in
            for i in 0..<total {
                try? database!.recordQueue.enqueue(NewRecord(stream: i % 2 == 0 ? .location : .health, capturedAt: clock!.now(),
                                              payload: Data("{\"i\":\(i)}".utf8)))
            }
        }
        let reader = try AgentDatabase(path: path)   // a second connection, like `status`
        writer.start()
        var last = 0
        var reads = 0
        while last < total {
            let n = try reader.recordQueue.counts().filter { $0.status == .pending }.reduce(0) { $0 + $1.records }
            XCTAssertGreaterThanOrEqual(n, last, "counts never go backwards while only inserts happen")
            XCTAssertLessThanOrEqual(n, total)
            last = n
            reads += 1
        }
        XCTAssertGreaterThan(reads, 1)
        XCTAssertEqual(try reader.recordQueue.count(stream: .location, status: .pending), total / 2)
        XCTAssertEqual(try reader.integrityCheck(), "ok")
    }

    func testComponentHealthUploadStatsAndState() throws {
        try database.agentState.storeLiveness(component: "location", .unhealthy(reason: "gpsd not reachable", code: nil))
        try database.agentState.storeLiveness(component: "microphone", .unhealthy(reason: "no access to hw:0", code: .permissionDenied))
        try database.agentState.storeLiveness(component: "location", .healthy)
        let health = try database.agentState.storedLiveness()
        XCTAssertEqual(health.map(\.component), ["location", "microphone"])
        XCTAssertEqual(health[0].state, "healthy")
        XCTAssertEqual(health[1].code, .permissionDenied)

        try database.recordQueue.recordUploadResult(stream: .location, success: true, result: "200", code: nil, records: 10, bytes: 1_000)
        clock.advance(by: 60)
        try database.recordQueue.recordUploadResult(stream: .location, success: false, result: "503", code: .serverError, records: 5, bytes: 500)
        let stats = try XCTUnwrap(database.recordQueue.uploadStats().first)
        XCTAssertEqual(stats.recordsSent, 10)
        XCTAssertEqual(stats.bytesSent, 1_000)
        XCTAssertEqual(stats.lastErrorCode, .serverError)
        XCTAssertEqual(stats.lastAttemptAt, clock.now())
        XCTAssertEqual(stats.lastSuccessAt, clock.now().addingTimeInterval(-60))

        try database.agentState.set("paused.microphone", "1")
        XCTAssertEqual(try database.agentState.value("paused.microphone"), "1")
        try database.agentState.set("paused.microphone", nil)
        XCTAssertNil(try database.agentState.value("paused.microphone"))
    }

    private func sqlite3Output(_ path: String, _ sql: String) throws -> String {
        // Python's sqlite3 module stands in for the sqlite3 CLI, which is not always installed.
        let py = try ChildProcess("python3", ["-c", """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1]); r = c.execute(sys.argv[2]).fetchall(); c.commit()
            print(r[0][0] if r else "")
            """, path, sql], logDirectory: dir.path)
        XCTAssertEqual(py.wait(), 0, py.stderr())
        return py.stdout().trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
