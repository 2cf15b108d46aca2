import AgentCore
import Foundation
import Platform
import TestRigs
import XCTest

/// Attachments (schema 4, docs/decisions/0003-attachments-as-files.md): a chunk's audio is a file of its own in
/// `<database>.attachments/`, written once (or linked from the journal), read back into the
/// payload as base64, and removed with its record, whatever deletes it.
final class AttachmentTests: XCTestCase {
    var dir: TemporaryDirectory!
    var clock: ManualClock!
    var database: AgentDatabase!
    var path: String { dir.file("agent.sqlite") }

    override func setUpWithError() throws {
        dir = try TemporaryDirectory("attachments")
        clock = ManualClock()
        database = try AgentDatabase(path: path, clock: clock)
    }

    /// 60 KB of bytes that do not compress, as an Opus chunk.
    func audio(_ seed: Int = 1, bytes: Int = 60_000) -> Data { TestRecords.incompressibleAudio(bytes: bytes, seed: seed) }

    func chunk(_ seed: Int = 1, existingFile: String? = nil, id: UUID = UUID()) throws -> NewRecord {
        var record = try NewRecord(id: id, stream: .microphone, capturedAt: clock.now(),
                                   fields: ["timestamp_start": "2027-01-15T08:00:00.000Z", "duration": 30])
        record.attachment = RecordAttachment(field: "audio_data", data: audio(seed), fileExtension: "ogg", existingFile: existingFile)
        return record
    }

    func storeFiles() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: database.attachmentDirectory)) ?? []).sorted()
    }

    func walBytes() -> Int64 { DatabaseFiles.walBytes(path) }

    func object(_ payload: Data) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: payload) as? [String: Any])
    }

    func testTheAudioIsAFileAndReadsBackAsBase64InThePayload() throws {
        let record = try chunk()
        let walBefore = walBytes()
        try database.recordQueue.enqueue(record)
        // The row and its bookkeeping: a few pages, not the 80 KB of base64 that went
        // through the WAL (and then the database) before schema 4.
        let wal = walBytes() - walBefore
        print("measured: WAL for enqueueing a 60 KB chunk: \(wal) bytes")
        XCTAssertLessThan(wal, 40 * 1_024, "the audio went through the WAL")

        let files = storeFiles()
        XCTAssertEqual(files.count, 1)
        XCTAssertTrue(files[0].hasPrefix(record.id.uuidString.lowercased()) && files[0].hasSuffix(".ogg"), files[0])
        XCTAssertEqual(FileManager.default.contents(atPath: "\(database.attachmentDirectory)/\(files[0])"), audio())
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: database.attachmentDirectory)[.posixPermissions] as? NSNumber)
        XCTAssertEqual(mode.intValue & 0o777, 0o700, "the directory holds recordings")

        let queued = try XCTUnwrap(database.recordQueue.pendingBatch(stream: .microphone, maxCount: 10, maxBytes: 10_000_000).first)
        let fields = try object(queued.payload)
        XCTAssertEqual(fields["audio_data"] as? String, audio().base64EncodedString())
        XCTAssertEqual(fields["timestamp_start"] as? String, "2027-01-15T08:00:00.000Z")
        XCTAssertEqual(fields["id"] as? String, record.id.uuidString.lowercased())
        // The byte counts (batches, status) weigh the record as it goes on the wire.
        let counted = try XCTUnwrap(database.recordQueue.counts().first { $0.stream == .microphone && $0.status == .pending })
        XCTAssertEqual(counted.bytes, Int64(queued.payload.count))
        XCTAssertEqual(database.fileBytes(), Int64(FileManager.default.contents(atPath: path)?.count ?? 0) + walBytes() + 60_000)
    }

    func testAJournalFileOfTheSameSizeIsLinkedNotCopied() throws {
        let journal = dir.file("journal.ogg")
        XCTAssertTrue(FileManager.default.createFile(atPath: journal, contents: audio(7)))
        try database.recordQueue.enqueue(try chunk(7, existingFile: journal))
        let stored = "\(database.attachmentDirectory)/\(try XCTUnwrap(storeFiles().first))"
        XCTAssertEqual(try inode(stored), try inode(journal), "the journal's file was written again")
        // The journal goes (as the microphone removes it); the stored audio stays.
        unlink(journal)
        XCTAssertEqual(FileManager.default.contents(atPath: stored), audio(7))

        // A journal that does not hold exactly the chunk (its write failed half-way) is not
        // used: the chunk's bytes are written.
        let short = dir.file("short.ogg")
        XCTAssertTrue(FileManager.default.createFile(atPath: short, contents: audio(8).prefix(1_000)))
        try database.recordQueue.enqueue(try chunk(8, existingFile: short))
        let records = try database.recordQueue.records(stream: .microphone)
        XCTAssertEqual(records.count, 2)
        XCTAssertEqual(try object(records[1].payload)["audio_data"] as? String, audio(8).base64EncodedString())
    }

    func inode(_ path: String) throws -> UInt64 {
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0, path)
        return UInt64(info.st_ino)
    }

    func testEveryDeletionRemovesTheFile() throws {
        // Retention.
        try database.recordQueue.enqueue(try chunk(1))
        let first = try XCTUnwrap(database.recordQueue.records(stream: .microphone).first).seq
        try database.recordQueue.markDelivered([first])
        clock.advance(by: 4 * 86_400)
        XCTAssertEqual(try database.housekeeping.applyRetention(RetentionPolicy()), 1)
        XCTAssertEqual(storeFiles(), [])

        // The storage guard's eviction (pending audio goes first).
        try database.recordQueue.enqueue(try chunk(2))
        let slice = try database.housekeeping.evictSlice(.pendingAudio, maxBytes: 1)
        XCTAssertEqual(slice.records, 1)
        XCTAssertEqual(storeFiles(), [])

        // Purge.
        try database.recordQueue.enqueue(try chunk(3))
        XCTAssertEqual(try database.housekeeping.purge(PurgeSelection(streams: [.microphone])).records, 1)
        XCTAssertEqual(storeFiles(), [])
        XCTAssertEqual(database.fileBytes(), Int64(FileManager.default.contents(atPath: path)?.count ?? 0) + walBytes())
    }

    /// What a crash can leave, and what the daemon's start makes of it.
    func testTheStartSweepRemovesWhatACrashLeftAndKeepsTheRest() throws {
        try database.recordQueue.enqueue(try chunk(1))
        let kept = try XCTUnwrap(storeFiles().first)
        // Killed between a file's placing and its record's commit (no row names it), and
        // a rename that never happened.
        let store = database.attachmentDirectory
        XCTAssertTrue(FileManager.default.createFile(atPath: "\(store)/\(UUID().uuidString.lowercased())-0.ogg", contents: audio(2)))
        XCTAssertTrue(FileManager.default.createFile(atPath: "\(store)/.\(UUID().uuidString.lowercased())-0.ogg.4242.tmp", contents: audio(3)))
        // Killed between a deletion's commit and its unlink: the name is in the trash.
        try database.recordQueue.enqueue(try chunk(4))
        let doomed = try XCTUnwrap(storeFiles().first { $0 != kept && !$0.hasSuffix(".tmp") && !$0.hasSuffix("-0.ogg") })
        let sqlite = try ChildProcess("python3", ["-c", """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.execute("PRAGMA foreign_keys = ON")
            c.execute("DELETE FROM records WHERE seq = (SELECT seq FROM attachments WHERE file = ?)", (sys.argv[2],))
            c.commit()
            """, path, doomed], logDirectory: dir.path)
        XCTAssertEqual(sqlite.wait(), 0, sqlite.stderr())
        XCTAssertEqual(storeFiles().count, 4)

        XCTAssertEqual(try database.housekeeping.sweepAttachments(), 2, "the two files no record names")
        XCTAssertEqual(storeFiles(), [kept], "the trash was emptied and the strays removed, the queued audio kept")
        XCTAssertEqual(try object(try XCTUnwrap(database.recordQueue.records(stream: .microphone).first).payload)["audio_data"] as? String,
                       audio(1).base64EncodedString())
    }

    func testARefusedRecordLeavesNoFileAndTouchesNotTheOneItRepeats() throws {
        let id = UUID()
        try database.recordQueue.enqueue(try chunk(1, id: id))
        XCTAssertThrowsError(try database.recordQueue.enqueue(try chunk(2, id: id)), "a second record with the same id")
        XCTAssertEqual(storeFiles().count, 1)
        XCTAssertEqual(try object(try XCTUnwrap(database.recordQueue.records(stream: .microphone).first).payload)["audio_data"] as? String,
                       audio(1).base64EncodedString())
    }

    func testAMissingFileReadsWithoutTheAudioInsteadOfStoppingTheStream() throws {
        try database.recordQueue.enqueue(try chunk(1))
        try database.recordQueue.enqueue(try chunk(2))
        let first = try XCTUnwrap(storeFiles().first { $0.hasPrefix(try XCTUnwrap(database.recordQueue.records(stream: .microphone).first).id.uuidString.lowercased()) })
        unlink("\(database.attachmentDirectory)/\(first)")
        let batch = try database.recordQueue.pendingBatch(stream: .microphone, maxCount: 10, maxBytes: 10_000_000)
        XCTAssertEqual(batch.count, 2)
        XCTAssertNil(try object(batch[0].payload)["audio_data"], "sent without it: the server refuses it alone")
        XCTAssertEqual(try object(batch[1].payload)["audio_data"] as? String, audio(2).base64EncodedString())
    }

    /// A held chunk (its time provisional) gets its times corrected in the small payload;
    /// the audio is untouched.
    func testAHeldChunkIsCorrectedWithoutItsAudio() throws {
        var record = try chunk(5)
        record.provisional = ProvisionalTime(bootID: "boot-a", bootTime: 100)
        try database.recordQueue.enqueue(record)
        let held = try XCTUnwrap(database.recordQueue.heldRecords(bootID: "boot-a", limit: 10).first)
        XCTAssertNil(try object(held.payload)["audio_data"])
        let fixed = Data(String(decoding: held.payload, as: UTF8.self)
            .replacingOccurrences(of: "2027-01-15T08:00:00.000Z", with: "2027-01-15T09:30:00.000Z").utf8)
        try database.recordQueue.release([ReleasedRecord(seq: held.seq, capturedAt: clock.now().addingTimeInterval(5_400), payload: fixed)])
        let queued = try XCTUnwrap(database.recordQueue.pendingBatch(stream: .microphone, maxCount: 10, maxBytes: 10_000_000).first)
        let fields = try object(queued.payload)
        XCTAssertEqual(fields["timestamp_start"] as? String, "2027-01-15T09:30:00.000Z")
        XCTAssertEqual(fields["audio_data"] as? String, audio(5).base64EncodedString())
    }

    /// What one location fix costs in WAL: its pages (1 KiB since schema 4) are what a
    /// commit writes, not the 4 KiB pages of SQLite's default.
    func testALocationFixWritesAFewKilobytesOfWAL() throws {
        for index in 0..<200 {
            try database.recordQueue.enqueue(try NewRecord(stream: .location, capturedAt: clock.now().addingTimeInterval(Double(index)),
                                            fields: ["latitude": 52.5, "longitude": 13.4, "accuracy": 4.2, "speed": 1.1,
                                                     "timestamp": "2027-01-15T08:00:00.000Z"]))
        }
        // Empty the WAL (another process, as `sqlite3` would): what it holds afterwards is
        // what the next commits wrote.
        let checkpoint = try ChildProcess("python3", ["-c", """
            import sqlite3, sys
            busy, log, done = sqlite3.connect(sys.argv[1]).execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            sys.exit(1 if busy else 0)
            """, path], logDirectory: dir.path)
        XCTAssertEqual(checkpoint.wait(), 0, checkpoint.stderr())
        let before = walBytes()
        XCTAssertEqual(before, 0)
        let fixes = 20
        for index in 0..<fixes {
            try database.recordQueue.enqueue(try NewRecord(stream: .location, capturedAt: clock.now().addingTimeInterval(Double(200 + index)),
                                            fields: ["latitude": 52.5, "longitude": 13.4, "accuracy": 4.2, "speed": 1.1,
                                                     "timestamp": "2027-01-15T08:00:00.000Z"]))
        }
        let perFix = Double(walBytes() - before) / Double(fixes)
        print("measured: WAL per location fix: \(Int(perFix)) bytes")
        // With 4 KiB pages the same commit appended five to six 4 KiB frames (20-25 KB); with
        // 1 KiB pages about seven 1 KiB frames (a page split every few rows included).
        XCTAssertGreaterThan(perFix, 1_024, "a commit writes at least its row's page")
        XCTAssertLessThan(perFix, 12_288, "4 KiB pages are back (20-25 KB a fix)")
    }

    /// An attachment that finds no room is E004 like a refused database write: the storage
    /// guard is called for, and no part-written file stays behind.
    func testAFullDiskRefusesTheAudioAsStorageFullAndLeavesNothing() throws {
        let filesystem = try SmallFilesystem.make(.tmpfs, megabytes: 8)
        let full = try AgentDatabase(path: filesystem.file("agent.sqlite"), clock: clock)
        try full.recordQueue.enqueue(try NewRecord(stream: .location, capturedAt: clock.now(), fields: ["latitude": 1.0]))
        _ = full.storagePressure.take()
        _ = try filesystem.fillWithAnotherProgram()
        XCTAssertThrowsError(try full.recordQueue.enqueue(try chunk(9))) { error in
            XCTAssertTrue(QueueError.isStorageFull(error), "\(error)")
        }
        XCTAssertTrue(full.storagePressure.take(), "the storage guard was not called for")
        XCTAssertEqual(((try? FileManager.default.contentsOfDirectory(atPath: full.attachmentDirectory)) ?? []), [],
                       "a part-written file stayed")
        XCTAssertEqual(try full.recordQueue.count(stream: .microphone, status: .pending), 0)
    }
}
