import Foundation
import GRDB

/// The attachment files deletions leave behind (docs/storage-format.md).
extension Housekeeping {
    /// Unlinks the attachment files of records deleted so far. Every deletion (retention,
    /// the storage guard, purge) calls it after its commit.
    func removeDeletedAttachments() throws {
        guard database.hasAttachmentTables else { return }
        try writing { try database.attachments.emptyTrash(connection) }
    }

    /// At the daemon's start, before capture begins: removes attachment files that no
    /// record names (a crash between a file's placing and its record's commit, or before a
    /// deleted record's unlink) and logs records whose file is missing (E009). Returns how
    /// many files were removed.
    @discardableResult
    public func sweepAttachments() throws -> Int {
        var report = AttachmentStore.SweepReport()
        try writing { report = try database.attachments.sweep(connection) }
        if report.strays > 0 {
            logger.notice("attachments: removed files no record names (left by a crash)",
                          metadata: ["count": "\(report.strays)", "directory": "\(database.attachments.directory)"])
        }
        if !report.missing.isEmpty {
            logger.error("\(AgentErrorCode.attachmentMissing.rawValue) queued records whose attachment file is missing; \(AgentErrorCode.attachmentMissing.hint)",
                         metadata: ["count": "\(report.missing.count)", "first_seq": "\(report.missing[0])",
                                    "directory": "\(database.attachments.directory)"])
        }
        return report.strays
    }
}
