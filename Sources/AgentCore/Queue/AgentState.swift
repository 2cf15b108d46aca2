import Foundation
import GRDB

/// The `agent_state` table: named state shared between the daemon and the commands
/// (`AgentStateKey`: pause switches, the daemon's pid, the uploader's memory and the like).
extension AgentDatabase {
    public func setState(_ key: String, _ value: String?) throws {
        try writing {
            try connection.write { db in
                if let value {
                    try db.execute(sql: """
                        INSERT INTO agent_state (key, value, updated_at) VALUES (?, ?, ?)
                        ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                        """, arguments: [key, value, clock.now().timeIntervalSince1970])
                } else {
                    try db.execute(sql: "DELETE FROM agent_state WHERE key = ?", arguments: [key])
                }
            }
        }
    }

    public func state(_ key: String) throws -> String? {
        try connection.read { db in try String.fetchOne(db, sql: "SELECT value FROM agent_state WHERE key = ?", arguments: [key]) }
    }
}
