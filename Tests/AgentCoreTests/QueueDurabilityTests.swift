import AgentCore
import Foundation
import Synchronization
import TestRigs
import XCTest

/// When a capture is on disk (docs/queue.md, Durability): every commit fsyncs the WAL before it
/// returns, except a capture without a file, which waits at most `[storage] sync_seconds`
/// for a later fsync. GRDB turns its connection to synchronous=NORMAL when it
/// switches on WAL, which silently made every commit wait for a checkpoint; the first
/// test fails if that comes back.
final class QueueDurabilityTests: XCTestCase {
    func testTheWriterCommitsWithSynchronousFull() throws {
        let dir = try TemporaryDirectory("durability")
        let path = dir.file("agent.sqlite")
        XCTAssertEqual(try AgentDatabase(path: path).durability(), "full", "a new queue")
        XCTAssertEqual(try AgentDatabase(path: path).durability(), "full", "an existing queue opened again")
    }

    func fix(_ index: Int) throws -> NewRecord { try TestRecords.fix(at: Date(timeIntervalSince1970: 1_800_000_000 + Double(index))) }

    func chunk() throws -> NewRecord {
        var record = try NewRecord(stream: .microphone, capturedAt: Date(), fields: ["duration": 30])
        record.attachment = RecordAttachment(field: "audio_data", data: Data(repeating: 7, count: 4_000), fileExtension: "ogg")
        return record
    }

    /// In the queue: a fix's commit waits (and the writer is back at FULL for every other
    /// commit), a chunk's commit is fsynced and takes the waiting fix with it, the uploader's
    /// read syncs before it reads, and the maintenance round's sync leaves nothing waiting.
    func testAFixWaitsAChunkDoesNotAndNothingIsReadForUploadBeforeItsSync() throws {
        let dir = try TemporaryDirectory("durability")
        let database = try AgentDatabase(path: dir.file("agent.sqlite"), syncWindow: 30)
        XCTAssertFalse(database.commitSync.isWaiting)

        try database.recordQueue.enqueue(fix(1))
        XCTAssertTrue(database.commitSync.isWaiting, "a fix's commit waits for a later fsync")
        XCTAssertEqual(try database.durability(), "full", "the writer is FULL again after the commit that waited")
        try database.recordQueue.enqueue(fix(2))
        XCTAssertTrue(database.commitSync.isWaiting)
        try database.recordQueue.enqueue(chunk())
        XCTAssertFalse(database.commitSync.isWaiting, "a chunk's commit is fsynced, and every commit before it with it")

        try database.recordQueue.enqueue(fix(3))
        XCTAssertTrue(database.commitSync.isWaiting)
        let batch = try database.recordQueue.pendingBatch(stream: .location, maxCount: 10, maxBytes: 1_000_000)
        XCTAssertEqual(batch.count, 3)
        XCTAssertFalse(database.commitSync.isWaiting, "the uploader's read synced the waiting fix first")

        try database.recordQueue.enqueue(fix(4))
        XCTAssertTrue(database.syncWaitingCaptures(waitedAtLeast: 3_600), "nothing due: nothing to do")
        XCTAssertTrue(database.commitSync.isWaiting, "a sync not due yet leaves the fix waiting")
        XCTAssertTrue(database.syncWaitingCaptures())
        XCTAssertFalse(database.commitSync.isWaiting)
        XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .pending), 4)
        XCTAssertEqual(try database.integrityCheck(), "ok")
    }

    /// With `sync_seconds = 0` every capture's commit is fsynced, as before the window.
    func testAWindowOfZeroSyncsEveryCommit() throws {
        let dir = try TemporaryDirectory("durability")
        let database = try AgentDatabase(path: dir.file("agent.sqlite"))
        XCTAssertEqual(database.commitSync.window, 0)
        try database.recordQueue.enqueue(fix(1))
        XCTAssertFalse(database.commitSync.isWaiting)
        database.commitSync.window = 30
        try database.recordQueue.enqueue(fix(2))
        XCTAssertTrue(database.commitSync.isWaiting, "a window set on a running queue (SIGHUP) applies to the next commit")
    }

    /// The window itself, on a clock the test moves: the commit that finds the oldest
    /// waiting capture at the end of its window is the one fsynced; a file is always
    /// fsynced; a failed sync leaves the captures waiting and is retried.
    func testTheCommitAtTheEndOfTheWindowIsFsyncedAndAFailedSyncIsRetried() {
        let time = Mutex(100.0)
        let syncs = Mutex(0)
        let syncWorks = Mutex(true)
        let sync = CommitSync(window: 30, now: { time.withLock { $0 } }) {
            guard syncWorks.withLock({ $0 }) else { return false }
            syncs.withLock { $0 += 1 }
            return true
        }
        func commit(at moment: Double, hasFile: Bool = false) -> Bool {
            time.withLock { $0 = moment }
            let synced = sync.mustSync(hasFile: hasFile)
            sync.committed(synced: synced)
            return synced
        }
        // A fix every 10 s: the first three wait, the fourth (30 s after the first) is fsynced.
        XCTAssertEqual([100.0, 110, 120, 130, 140].map { commit(at: $0) }, [false, false, false, true, false])
        XCTAssertEqual(sync.oldestWait, 0, "the fix at 140 waits from 140")
        XCTAssertTrue(commit(at: 145, hasFile: true), "a chunk is fsynced whatever the window")
        XCTAssertNil(sync.oldestWait)

        XCTAssertFalse(commit(at: 150))
        time.withLock { $0 = 170 }
        XCTAssertTrue(sync.flush(waitedAtLeast: 25), "20 s of waiting is not 25: nothing to do")
        XCTAssertEqual(syncs.withLock { $0 }, 0)
        syncWorks.withLock { $0 = false }
        XCTAssertFalse(sync.flush(waitedAtLeast: 0), "a sync that fails says so")
        XCTAssertEqual(sync.oldestWait, 20, "and the fix still waits, from its own commit")
        syncWorks.withLock { $0 = true }
        XCTAssertTrue(sync.flush())
        XCTAssertEqual(syncs.withLock { $0 }, 1)
        XCTAssertFalse(sync.isWaiting)
        XCTAssertTrue(sync.flush(), "nothing waits: no sync")
        XCTAssertEqual(syncs.withLock { $0 }, 1)
    }
}
