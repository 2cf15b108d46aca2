import Foundation
import GRDB

/// A component's liveness as the supervisor last stored it.
public struct StoredLiveness: Sendable, Equatable {
    public var component: String
    public var state: String
    public var reason: String?
    public var code: AgentErrorCode?
    public var checkedAt: Date
}

/// The `component_health` table (named so since schema 1): each component's liveness as
/// the supervisor last stored it, for `status`.
extension AgentStateStore {
    public func storeLiveness(component: String, _ liveness: Liveness) throws {
        try store(LivenessCheckWrite(liveness: [component: liveness]))
    }

    public func storedLiveness() throws -> [StoredLiveness] {
        try connection.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM component_health ORDER BY component").map { row in
                StoredLiveness(component: row["component"], state: row["state"], reason: row["reason"],
                             code: (row["code"] as String?).flatMap(AgentErrorCode.init(rawValue:)),
                             checkedAt: Date(timeIntervalSince1970: row["checked_at"]))
            }
        }
    }
}
