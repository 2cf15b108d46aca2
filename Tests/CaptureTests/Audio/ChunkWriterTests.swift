import AgentCore
@testable import Capture
import Foundation
import Logging
import Platform
import Synchronization
import TestRigs
import XCTest

/// The microphone's writer with a real SQLite queue that refuses writes for a while
/// (`RefusingQueue`): chunks left waiting keep their journal file durable (`JournalDurability`).
final class ChunkWriterTests: XCTestCase {
    let logger = Logger(label: "test")

    /// The microphone leaves a finished chunk's last pages to the queue's sync; a chunk the
    /// queue refuses gets its journal file synced here, once, and once the queue takes it
    /// the chunk's file is linked in, not copied.
    func testChunksLeftWaitingHaveTheirJournalFileSyncedOnce() throws {
        let directory = try TemporaryDirectory()
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let sink = RefusingQueue(database)
        let synced = Mutex<[String]>([])
        let durability = JournalDurability(directory: directory.path, syncInterval: .seconds(10), syncFile: { path in
            synced.withLock { $0.append(path) }
            FileWrites.syncFile(path)
        })
        let writer = ChunkWriter(queue: sink, logger: logger, durability: durability)
        var paths: [String] = []
        for index in 0..<2 {
            let bytes = Data(repeating: UInt8(index + 1), count: 3_000)
            let path = directory.file("chunk-\(index).ogg")
            try bytes.write(to: URL(fileURLWithPath: path))
            var record = try NewRecord(id: UUID(), stream: .microphone, capturedAt: Date(timeIntervalSince1970: 1_800_000_000 + Double(index)),
                                       fields: ["duration": 30])
            record.attachment = RecordAttachment(field: MicrophoneRecord.audioField, data: bytes, fileExtension: "ogg", existingFile: path)
            writer.write(record)
            paths.append(path)
        }
        writer.flush()
        XCTAssertEqual(writer.current().waiting, 2)
        XCTAssertEqual(synced.withLock { $0 }.sorted(), paths, "each waiting chunk's journal file synced")
        writer.flush()
        XCTAssertEqual(synced.withLock { $0 }.count, 2, "once each, however often the queue refuses")

        sink.setRefusing(false)
        writer.flush()
        XCTAssertEqual(writer.current().waiting, 0)
        XCTAssertEqual(writer.current().written, 2)
        XCTAssertEqual(synced.withLock { $0 }.count, 2, "a chunk the queue takes is synced by the queue")
        XCTAssertEqual(try database.recordQueue.records(stream: .microphone).count, 2)
        for path in paths {
            var info = stat()
            XCTAssertEqual(stat(path, &info), 0)
            XCTAssertEqual(info.st_nlink, 2, "\(path) linked into the queue's attachments")
        }
    }
}
