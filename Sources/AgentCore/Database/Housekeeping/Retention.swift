import Foundation
import GRDB

/// Settings of retention and the storage guard ([storage] in the config).
public struct RetentionPolicy: Sendable, Equatable {
    /// Uploaded records are deleted this long after the server stored them.
    public var keepUploaded: TimeInterval
    /// Failed records are kept this long (for `status` and diagnosis), then deleted.
    public var keepFailed: TimeInterval
    /// `[storage] min_free_mb` in bytes; the storage guard reads it through `StorageLimits`.
    public var minFreeBytes: Int64

    public init(keepUploaded: TimeInterval = 3 * 86_400, keepFailed: TimeInterval = 3 * 86_400, minFreeBytes: Int64 = 100 * 1_048_576) {
        self.keepUploaded = keepUploaded
        self.keepFailed = keepFailed
        self.minFreeBytes = minFreeBytes
    }
}

extension Housekeeping {
    /// Deletes uploaded and failed records past their retention. Returns how many went.
    @discardableResult
    public func applyRetention(_ policy: RetentionPolicy) throws -> Int {
        let now = clock.now().timeIntervalSince1970
        var deleted = 0
        try writing {
            try connection.write { db in
                // `status <> 'pending'` lets SQLite use the index of settled records (schema 4).
                try db.execute(sql: "DELETE FROM records WHERE status = 'uploaded' AND status <> 'pending' AND status_changed_at < ?",
                               arguments: [now - policy.keepUploaded])
                deleted += db.changesCount
                try db.execute(sql: "DELETE FROM records WHERE status = 'failed' AND status <> 'pending' AND status_changed_at < ?",
                               arguments: [now - policy.keepFailed])
                deleted += db.changesCount
            }
        }
        // The coverage ledger is kept as long as the uploaded records it tells of.
        try database.coverage.purge(endedBefore: Date(timeIntervalSince1970: now - policy.keepUploaded))
        if deleted > 0 {
            try removeDeletedAttachments()
            try releaseFreePages()
        }
        return deleted
    }

    /// Hands freed pages back to the file system (incremental vacuum and a checkpoint
    /// that truncates the WAL, in steps: see `compact`).
    func releaseFreePages() throws {
        try compact(stepPages: 2_048)
    }
}
