import AgentCore
import Foundation
import Platform
import TestRigs
import XCTest

/// Marking a record must not write its audio again (schema 3 moved payloads to a table of
/// their own; schema 4 moved the audio to files and small payloads back into the rows),
/// and a queue written by an earlier version keeps every record readable.
final class PayloadTableTests: XCTestCase {
    var dir: TemporaryDirectory!

    override func setUpWithError() throws {
        dir = try TemporaryDirectory("payloads")
    }

    /// A chunk as the microphone writes it now: 60 KB of audio as its attachment.
    func chunk(at time: Date) throws -> NewRecord {
        let audio = TestRecords.incompressibleAudio()
        var record = try NewRecord(stream: .microphone, capturedAt: time, fields: ["timestamp_start": "x"])
        record.attachment = RecordAttachment(field: "audio_data", data: audio, fileExtension: "ogg")
        return record
    }

    /// An audio-sized record (80 KB of base64 in its payload), as the microphone wrote one
    /// before schema 4.
    func audioRecord(at time: Date) throws -> NewRecord {
        let audio = TestRecords.incompressibleAudio().base64EncodedString()
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

    func testMarkingAnUploadWritesAFewPagesNotTheAudio() throws {
        let path = dir.file("agent.sqlite")
        let database = try AgentDatabase(path: path)
        let record = try chunk(at: Date())
        try database.recordQueue.enqueue(record)
        try checkpoint(path)
        XCTAssertEqual(DatabaseFiles.walBytes(path), 0)

        let queued = try XCTUnwrap(database.recordQueue.pendingBatch(stream: .microphone, maxCount: 1, maxBytes: 1_000_000).first)
        try database.recordQueue.noteSending(stream: .microphone)
        try database.recordQueue.markDelivered([queued.seq])
        // Before schema 3 each of the two updates changed the row's size, and SQLite wrote
        // its ~80 KB of overflow pages again: over 160 KB of WAL. Now: the row's page, its
        // index pages and the counts, twice.
        print("measured: WAL after marking a 60 KB chunk sent and uploaded: \(DatabaseFiles.walBytes(path)) bytes")
        XCTAssertLessThan(DatabaseFiles.walBytes(path), 48 * 1_024, "marking rewrote the audio")
        let read = try XCTUnwrap(database.recordQueue.records(stream: .microphone).first)
        XCTAssertEqual(read.payload, queued.payload)
        XCTAssertEqual(read.status, .uploaded)
    }

    /// A queue of schema 2 (payloads in the rows) is migrated; its records read, upload
    /// and go as before, and new records beside them use the payload table.
    func testAQueueFromBeforeKeepsItsPayloadsInTheRows() throws {
        let path = dir.file("old.sqlite")
        let old = try audioRecord(at: Date(timeIntervalSince1970: 1_800_000_000))
        do {
            let writer = try AgentDatabase(path: path)
            try writer.recordQueue.enqueue(old)
        }
        try OlderQueue.downgrade(path, to: 2, logDirectory: dir.path)

        let database = try AgentDatabase(path: path)
        let new = try audioRecord(at: Date(timeIntervalSince1970: 1_800_000_030))
        try database.recordQueue.enqueue(new)
        let batch = try database.recordQueue.pendingBatch(stream: .microphone, maxCount: 10, maxBytes: 10_000_000)
        XCTAssertEqual(batch.map(\.id), [old.id, new.id])
        XCTAssertEqual(batch.map(\.payload), [old.payload, new.payload])
        var exported: [Data] = []
        try database.recordQueue.forEachRecord(stream: .microphone) { exported.append($0.payload) }
        XCTAssertEqual(exported, [old.payload, new.payload])

        try database.recordQueue.markDelivered(batch.map(\.seq))
        XCTAssertEqual(try database.recordQueue.count(stream: .microphone, status: .uploaded), 2)
        XCTAssertEqual(try database.integrityCheck(), "ok")
    }

    /// Deleting a record of schema 3 (retention, eviction, purge) takes its payload with it.
    func testDeletingARecordDeletesItsPayload() throws {
        let path = dir.file("agent.sqlite")
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        do {
            let writer = try AgentDatabase(path: path, clock: clock)
            try writer.recordQueue.enqueue(try audioRecord(at: clock.now()))
        }
        try OlderQueue.downgrade(path, to: 3, logDirectory: dir.path)
        let database = try AgentDatabase(path: path, clock: clock)
        XCTAssertEqual(try database.recordQueue.records(stream: .microphone).first?.payload.count, try audioRecord(at: clock.now()).payload.count,
                       "the schema 3 row reads its payload from the payload table")
        let seq = try XCTUnwrap(database.recordQueue.records(stream: .microphone).first).seq
        try database.recordQueue.markDelivered([seq])
        clock.advance(by: 30 * 86_400)
        XCTAssertEqual(try database.housekeeping.applyRetention(RetentionPolicy()), 1)
        let py = try ChildProcess("python3", ["-c", """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            print(c.execute("SELECT count(*) FROM payloads").fetchone()[0])
            """, path], logDirectory: dir.path)
        XCTAssertEqual(py.wait(), 0, py.stderr())
        XCTAssertEqual(py.stdout().trimmingCharacters(in: .whitespacesAndNewlines), "0", "a payload outlived its record")
    }
}
