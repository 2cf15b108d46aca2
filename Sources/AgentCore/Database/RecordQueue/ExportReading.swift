import Foundation
import GRDB

extension RecordQueue {
    /// Calls `body` with every record of `stream` still in the queue (pending or uploaded:
    /// failed ones were refused and are not the user's data as captured), captured in
    /// [`since`, `until`), oldest capture first.
    ///
    /// One read transaction: a consistent snapshot that holds one record in memory at a
    /// time (a day of audio is ~200 MB), and in WAL mode it never blocks the daemon's writes.
    public func forEachRecord(stream: StreamName, since: Date? = nil, until: Date? = nil,
                              _ body: (QueuedRecord) throws -> Void) throws {
        var sql = "SELECT seq FROM records WHERE stream = ? AND status IN ('pending', 'uploaded')"
        var arguments: StatementArguments = [stream.rawValue]
        if let since {
            sql += " AND captured_at >= ?"
            arguments += [since.timeIntervalSince1970]
        }
        if let until {
            sql += " AND captured_at < ?"
            arguments += [until.timeIntervalSince1970]
        }
        try connection.read { db in
            // Order the small keys first, then read each record by its key: sorting whole
            // rows would copy a day of audio (~200 MB) through SQLite's sorter.
            let seqs = try Int64.fetchAll(db, sql: sql + " ORDER BY captured_at, seq", arguments: arguments)
            let one = try db.cachedStatement(sql: "SELECT \(recordColumns) FROM \(recordsWithPayloads) WHERE r.seq = ?")
            for seq in seqs {
                guard let row = try Row.fetchOne(one, arguments: [seq]) else { continue }
                try body(record(from: row))
            }
        }
    }
}
