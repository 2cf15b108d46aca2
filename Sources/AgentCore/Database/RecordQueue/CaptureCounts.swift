import Foundation
import GRDB

extension RecordQueue {
    /// How many records of `stream` captured from `from` to `to` the queue holds, per cell of
    /// `cellSeconds` (0 the first) and status: the uploaded/pending split of `coverage --svg`.
    /// Records retention already deleted are not counted.
    public func captureCounts(stream: StreamName, from: Date, to: Date, cellSeconds: Double) throws -> [Int: [RecordStatus: Int]] {
        guard cellSeconds > 0 else { return [:] }
        return try connection.read { db in
            var counts: [Int: [RecordStatus: Int]] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT CAST((captured_at - ?) / ? AS INTEGER) AS cell, status, COUNT(*) AS n FROM records
                WHERE stream = ? AND captured_at >= ? AND captured_at < ? GROUP BY cell, status
                """, arguments: [from.timeIntervalSince1970, cellSeconds, stream.rawValue, from.timeIntervalSince1970, to.timeIntervalSince1970]) {
                guard let status = RecordStatus(rawValue: row["status"]) else { continue }
                counts[row["cell"] as Int, default: [:]][status] = row["n"] as Int
            }
            return counts
        }
    }
}
