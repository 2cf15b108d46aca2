@testable import AgentCore
import Foundation
import GRDB
import GRDBSQLite
import TestRigs
import XCTest

/// The queue's one connection holds its page cache to `AgentDatabase.pageCacheKiB`
/// (docs/architecture.md#memory). A cache fills up to its cap and stays full: the storage
/// guard's size of the queue (`fileBytes`, at every maintenance round) reads the whole
/// attachments table, and three days of 30 s chunks, the default retention, are 8,640 rows.
final class PageCacheTests: XCTestCase {
    func testThreeDaysOfChunksDoNotFillMoreThanTheCap() throws {
        let directory = try TemporaryDirectory("page-cache")
        let database = try AgentDatabase(path: directory.file("agent.sqlite"))
        let rows = 3 * 24 * 120
        try database.connection.write { db in
            for seq in 1...rows {
                try db.execute(sql: "INSERT INTO attachments (seq, field, file, bytes) VALUES (?, 'audio_data', ?, 48000)",
                               arguments: [seq, "\(UUID().uuidString.lowercased()).ogg"])
            }
        }
        let files = database.fileBytes()
        XCTAssertGreaterThanOrEqual(files, Int64(rows) * 48_000, "the sum read every row")

        let used = try database.connection.read { db -> Int32 in
            var current: Int32 = 0
            var highest: Int32 = 0
            XCTAssertEqual(sqlite3_db_status(db.sqliteConnection, SQLITE_DBSTATUS_CACHE_USED, &current, &highest, 0), SQLITE_OK)
            return current
        }
        print("measured: page cache after summing \(rows) attachments: \(used) bytes")
        // The cap is in page contents; each cached page also carries SQLite's header (~10 %).
        XCTAssertLessThanOrEqual(Int(used), AgentDatabase.pageCacheKiB * 1_024 * 5 / 4)
        XCTAssertGreaterThan(Int(used), AgentDatabase.pageCacheKiB * 1_024 / 2, "the table is larger than the cache: it fills")
    }
}
