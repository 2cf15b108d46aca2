import AgentCore
@testable import Capture
import Foundation
import Logging
import Platform
import Synchronization
import TestRigs
import XCTest

/// The one owner of when a chunk's journal reaches the disk, on real files: pages of a
/// chunk in progress wait their interval, a chunk left waiting for the queue is synced once.
final class JournalDurabilityTests: XCTestCase {
    let logger = Logger(label: "ariata.journal.test")

    /// Pages are synced by the `syncDue` that finds the oldest of them `syncInterval` old,
    /// not by an earlier one.
    func testPagesOfAChunkInProgressWaitTheirIntervalForTheirSync() throws {
        let directory = try TemporaryDirectory()
        let journal = AudioJournal(directory: directory.file("journal"), logger: logger, syncInterval: .seconds(1))
        try journal.prepare()
        let file = try journal.begin(ChunkBeginning(start: Date(timeIntervalSince1970: 1_800_000_000), overlapFrames: 0, sampleRate: 16_000),
                                     bitrate: 16_000)
        let durability = journal.durability
        durability.waitForSyncs()
        XCTAssertEqual(durability.currentStats().syncs, 1, "the directory: the file's name, its header")
        let page = [UInt8](repeating: 7, count: 2_000)
        page.withUnsafeBytes { file.append($0) }
        durability.syncDue()
        XCTAssertEqual(durability.currentStats().syncs, 1, "a page younger than the interval waits")
        Thread.sleep(forTimeInterval: 1.1)
        page.withUnsafeBytes { file.append($0) }
        durability.syncDue()
        let stats = durability.currentStats()
        XCTAssertEqual(stats.syncs, 2, "the oldest page is due: both pages in one sync")
        XCTAssertEqual(stats.bytes, 4_000)
        XCTAssertGreaterThanOrEqual(stats.longestUnsynced, .seconds(1))
        journal.remove(file.id)
    }

    /// A finished chunk the queue refuses has its file synced once however often it is
    /// refused; once the chunk is no concern of the journal's, a later wait syncs again.
    func testAChunkLeftWaitingIsSyncedOnce() throws {
        let directory = try TemporaryDirectory()
        let synced = Mutex<[String]>([])
        let durability = JournalDurability(directory: directory.path, syncInterval: .seconds(10), syncFile: { path in
            synced.withLock { $0.append(path) }
            FileWrites.syncFile(path)
        })
        let first = (id: UUID(), path: directory.file("first.ogg"))
        let second = (id: UUID(), path: directory.file("second.ogg"))
        for chunk in [first, second] {
            XCTAssertTrue(FileManager.default.createFile(atPath: chunk.path, contents: Data(repeating: 1, count: 3_000)))
        }
        durability.chunkWaits(first.id, file: first.path)
        durability.chunkWaits(first.id, file: first.path)
        durability.chunkWaits(second.id, file: second.path)
        XCTAssertEqual(synced.withLock { $0 }, [first.path, second.path])

        durability.forget(first.id)
        durability.chunkWaits(first.id, file: first.path)
        durability.chunkWaits(second.id, file: second.path)
        XCTAssertEqual(synced.withLock { $0 }, [first.path, second.path, first.path])
        XCTAssertEqual(durability.currentStats(), JournalDurability.Stats(), "no page of a chunk in progress was synced")
    }
}
