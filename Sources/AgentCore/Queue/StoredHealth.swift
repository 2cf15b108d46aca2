import Foundation
import GRDB

/// A component's health as last stored by the health coordinator.
public struct StoredHealth: Sendable, Equatable {
    public var component: String
    public var state: String
    public var reason: String?
    public var code: AgentErrorCode?
    public var checkedAt: Date
}

/// The `component_health` table: each component's health as the health coordinator last
/// stored it, for `status`.
extension AgentDatabase {
    public func storeHealth(component: String, _ health: StreamHealth) throws {
        try store(HealthCheckWrite(health: [component: health]))
    }

    public func storedHealth() throws -> [StoredHealth] {
        try connection.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM component_health ORDER BY component").map { row in
                StoredHealth(component: row["component"], state: row["state"], reason: row["reason"],
                             code: (row["code"] as String?).flatMap(AgentErrorCode.init(rawValue:)),
                             checkedAt: Date(timeIntervalSince1970: row["checked_at"]))
            }
        }
    }
}
