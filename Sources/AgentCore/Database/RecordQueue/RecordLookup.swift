import Foundation
import GRDB

/// Asks whether a record is already in the queue. The audio journal needs it: a chunk
/// whose process was killed between its enqueue and the removal of its journal must not
/// be enqueued twice.
public protocol RecordLookup: Sendable {
    func containsRecord(id: UUID) throws -> Bool
}

extension RecordQueue: RecordLookup {
    /// Whatever the record's status (pending, uploaded or failed): the id is UNIQUE.
    public func containsRecord(id: UUID) throws -> Bool {
        try connection.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM records WHERE record_id = ?)", arguments: [id]) ?? false
        }
    }
}
