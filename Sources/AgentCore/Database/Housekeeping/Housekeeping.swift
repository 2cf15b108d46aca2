import Foundation

/// The store of what deletes records and gives their space back (docs/storage.md):
/// retention, the storage guard's eviction, compaction and checkpoints, `purge`, and the
/// attachment files those deletions leave (a `DatabaseStore`).
public struct Housekeeping: DatabaseStore {
    public let database: AgentDatabase

    public init(_ database: AgentDatabase) {
        self.database = database
    }
}

extension AgentDatabase {
    /// Retention, eviction, compaction, purge and the attachment sweep.
    public var housekeeping: Housekeeping { Housekeeping(self) }
}
