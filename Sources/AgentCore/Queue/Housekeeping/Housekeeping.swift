import Foundation
import GRDB
import Logging
import Platform

/// The store of what deletes records and gives their space back (docs/storage.md):
/// retention, the storage guard's eviction, compaction and checkpoints, `purge`, and the
/// attachment files those deletions leave. A view over `AgentDatabase` that holds nothing
/// of its own: its writes take turns with every other on the one connection, and a full
/// disk is reported as the database's other writes report it (E004).
public struct Housekeeping: Sendable {
    public let database: AgentDatabase

    public init(_ database: AgentDatabase) {
        self.database = database
    }

    var connection: DatabaseQueue { database.connection }
    var clock: any WallClock { database.clock }
    var logger: Logger { database.logger }
    var path: String { database.path }

    func writing(_ body: () throws -> Void) throws {
        try database.writing(body)
    }
}

extension AgentDatabase {
    /// Retention, eviction, compaction, purge and the attachment sweep.
    public var housekeeping: Housekeeping { Housekeeping(self) }
}
