import AgentCore
import Foundation
import TestRigs
import XCTest

/// Payloads in a table of their own (schema 3, issue 14): marking a record must not write
/// its payload again, and a queue written before keeps every record readable.
final class PayloadTableTests: XCTestCase {
    var dir: TemporaryDirectory!

    override func setUpWithError() throws {
        dir = try TemporaryDirectory("payloads")
    }

    /// An audio-sized record (80 KB of base64), as the microphone writes one.
    func audioRecord(at time: Date) throws -> NewRecord {
        let audio = Data((0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }).base64EncodedString()
        return try NewRecord(stream: .microphone, capturedAt: time, fields: ["timestamp_start": "x", "audio_data": audio])
    }

    /// Empties the WAL into the database (another process, as `sqlite3` would), so the
    /// WAL's size afterwards is what the next writes cost.
    func checkpoint(_ path: String) throws {
        let py = try ChildProcess("python3", ["-c", """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            busy, log, done = c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            sys.exit(1 if busy else 0)
            """, path], logDirectory: dir.path)
        XCTAssertEqual(py.wait(), 0, py.stderr())
    }

    func walBytes(_ path: String) -> Int64 {
        (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? NSNumber)?.int64Value ?? 0
    }

    func testMarkingAnUploadWritesAFewPagesNotThePayload() throws {
        let path = dir.file("agent.sqlite")
        let queue = try SQLiteQueue(path: path)
        let record = try audioRecord(at: Date())
        try queue.enqueue(record)
        XCTAssertGreaterThan(walBytes(path), Int64(record.payload.count), "the payload went through the WAL once")
        try checkpoint(path)
        XCTAssertEqual(walBytes(path), 0)

        let seq = try XCTUnwrap(queue.pendingBatch(stream: .microphone, maxCount: 1, maxBytes: 1_000_000).first).seq
        try queue.noteSending([seq])
        try queue.markUploaded([seq])
        // Before schema 3 each of the two updates changed the row's size, and SQLite wrote
        // its ~80 KB of overflow pages again: over 160 KB of WAL. Now: the row's page, its
        // index pages and the counts, twice.
        print("measured: WAL after marking an 80 KB record sent and uploaded: \(walBytes(path)) bytes")
        XCTAssertLessThan(walBytes(path), 48 * 1_024, "marking rewrote the payload")
        XCTAssertEqual(try queue.records(stream: .microphone).first?.payload, record.payload)
        XCTAssertEqual(try queue.records(stream: .microphone).first?.status, .uploaded)
    }

    /// A queue of schema 2 (payloads in the rows) is migrated; its records read, upload
    /// and go as before, and new records beside them use the payload table.
    func testAQueueFromBeforeKeepsItsPayloadsInTheRows() throws {
        let path = dir.file("old.sqlite")
        let old = try audioRecord(at: Date(timeIntervalSince1970: 1_800_000_000))
        do {
            let writer = try SQLiteQueue(path: path)
            try writer.enqueue(old)
        }
        let py = try ChildProcess("python3", ["-c", """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.executescript('''
                UPDATE records SET payload = (SELECT data FROM payloads WHERE payloads.seq = records.seq);
                DROP TABLE payloads; PRAGMA user_version = 2;''')
            c.close()
            """, path], logDirectory: dir.path)
        XCTAssertEqual(py.wait(), 0, py.stderr())

        let queue = try SQLiteQueue(path: path)
        let new = try audioRecord(at: Date(timeIntervalSince1970: 1_800_000_030))
        try queue.enqueue(new)
        let batch = try queue.pendingBatch(stream: .microphone, maxCount: 10, maxBytes: 10_000_000)
        XCTAssertEqual(batch.map(\.id), [old.id, new.id])
        XCTAssertEqual(batch.map(\.payload), [old.payload, new.payload])
        var exported: [Data] = []
        try queue.forEachRecord(stream: .microphone) { exported.append($0.payload) }
        XCTAssertEqual(exported, [old.payload, new.payload])

        try queue.markUploaded(batch.map(\.seq))
        XCTAssertEqual(try queue.count(stream: .microphone, status: .uploaded), 2)
        XCTAssertEqual(try queue.integrityCheck(), "ok")
    }

    /// Deleting a record (retention, eviction, purge) takes its payload with it.
    func testDeletingARecordDeletesItsPayload() throws {
        let path = dir.file("agent.sqlite")
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let queue = try SQLiteQueue(path: path, clock: clock)
        try queue.enqueue(try audioRecord(at: clock.now()))
        let seq = try XCTUnwrap(queue.records(stream: .microphone).first).seq
        try queue.markUploaded([seq])
        clock.advance(by: 30 * 86_400)
        XCTAssertEqual(try queue.applyRetention(RetentionPolicy()), 1)
        let py = try ChildProcess("python3", ["-c", """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            print(c.execute("SELECT count(*) FROM payloads").fetchone()[0])
            """, path], logDirectory: dir.path)
        XCTAssertEqual(py.wait(), 0, py.stderr())
        XCTAssertEqual(py.stdout().trimmingCharacters(in: .whitespacesAndNewlines), "0", "a payload outlived its record")
    }
}
