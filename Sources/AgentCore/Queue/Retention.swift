import Foundation
import GRDB

/// Settings of retention and the storage guard ([storage] in the config).
public struct RetentionPolicy: Sendable, Equatable {
    /// Uploaded records are deleted this long after the server stored them.
    public var keepUploaded: TimeInterval
    /// Failed records are kept this long (for `status` and diagnosis), then deleted.
    public var keepFailed: TimeInterval
    /// Below this many free bytes under the database the storage guard deletes records.
    public var minFreeBytes: Int64

    public init(keepUploaded: TimeInterval = 3 * 86_400, keepFailed: TimeInterval = 3 * 86_400, minFreeBytes: Int64 = 100 * 1_048_576) {
        self.keepUploaded = keepUploaded
        self.keepFailed = keepFailed
        self.minFreeBytes = minFreeBytes
    }
}

/// What one pass of the storage guard did.
public struct StorageGuardReport: Sendable, Equatable {
    public var deletedUploaded = 0
    public var deletedFailed = 0
    public var deletedPending = 0
    public var freeBytesBefore: Int64 = 0
    public var freeBytesAfter: Int64 = 0
    public var deletedAny: Bool { deletedUploaded + deletedFailed + deletedPending > 0 }
}

extension SQLiteQueue {
    /// Deletes uploaded and failed records past their retention. Returns how many went.
    @discardableResult
    public func applyRetention(_ policy: RetentionPolicy) throws -> Int {
        let now = clock.now().timeIntervalSince1970
        var deleted = 0
        try writing {
            try pool.write { db in
                try db.execute(sql: "DELETE FROM records WHERE status = 'uploaded' AND status_changed_at < ?",
                               arguments: [now - policy.keepUploaded])
                deleted += db.changesCount
                try db.execute(sql: "DELETE FROM records WHERE status = 'failed' AND status_changed_at < ?",
                               arguments: [now - policy.keepFailed])
                deleted += db.changesCount
            }
        }
        if deleted > 0 { try releaseFreePages() }
        return deleted
    }

    /// When free disk under the database is below `policy.minFreeBytes`, deletes the
    /// oldest records (uploaded first, then failed, then the oldest pending) in slices
    /// until it is back above, and records an E004 event that `status` shows.
    /// `freeBytes` is injectable so tests can play a small disk.
    @discardableResult
    public func guardStorage(_ policy: RetentionPolicy, sliceSize: Int = 500,
                             freeBytes: (() -> Int64?)? = nil) throws -> StorageGuardReport {
        let measure = freeBytes ?? { DiskSpace.availableBytes(at: self.path) }
        var report = StorageGuardReport()
        guard var free = measure() else { return report }
        report.freeBytesBefore = free
        report.freeBytesAfter = free
        guard free < policy.minFreeBytes else { return report }

        for status in [RecordStatus.uploaded, .failed, .pending] {
            while free < policy.minFreeBytes {
                let deleted = try deleteOldest(status: status, limit: sliceSize)
                if deleted == 0 { break }
                switch status {
                case .uploaded: report.deletedUploaded += deleted
                case .failed: report.deletedFailed += deleted
                case .pending: report.deletedPending += deleted
                }
                try releaseFreePages()
                free = measure() ?? free
            }
        }
        report.freeBytesAfter = free
        let message = "free disk \(free / 1_048_576) MB below the \(policy.minFreeBytes / 1_048_576) MB minimum: "
            + "deleted \(report.deletedUploaded) uploaded, \(report.deletedFailed) failed and \(report.deletedPending) pending records"
        logger.error("\(AgentErrorCode.storageFull.rawValue) \(message)")
        try? recordEvent(code: .storageFull, message: message)
        return report
    }

    private func deleteOldest(status: RecordStatus, limit: Int) throws -> Int {
        var deleted = 0
        try writing {
            try pool.write { db in
                let order = status == .pending ? "seq" : "status_changed_at, seq"
                try db.execute(sql: """
                    DELETE FROM records WHERE seq IN (
                        SELECT seq FROM records WHERE status = ? ORDER BY \(order) LIMIT ?)
                    """, arguments: [status.rawValue, limit])
                deleted = db.changesCount
            }
        }
        return deleted
    }

    /// Hands freed pages back to the file system: incremental vacuum, then a checkpoint
    /// that truncates the WAL.
    func releaseFreePages() throws {
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA incremental_vacuum")
            _ = try? db.checkpoint(.truncate)
        }
    }
}
