import Foundation
import GRDB
import Logging
import Platform

/// A focused store over `AgentDatabase` (`RecordQueue`, `Housekeeping`, `AgentStateStore`):
/// it holds nothing but the database, and its reads and writes take turns with every other
/// on the database's one connection; a full disk is reported as the database's own writes
/// report it (E004).
protocol DatabaseStore: Sendable {
    var database: AgentDatabase { get }
}

extension DatabaseStore {
    var connection: DatabaseQueue { database.connection }
    var clock: any WallClock { database.clock }
    var logger: Logger { database.logger }
    var path: String { database.path }

    func writing(_ body: () throws -> Void) throws {
        try database.writing(body)
    }
}
