import Foundation
import GRDB
import Logging
import Platform

/// The store of what the agent keeps about itself beside the records, for the processes
/// that come after it and for `status` (docs/queue.md): named values (`agent_state`, the
/// keys in `AgentStateKey`: pause switches, the daemon's pid, the uploader's memory and
/// the like), each component's liveness as the supervisor last stored it
/// (`component_health`), each boot's time evidence (`time_evidence`) and the events
/// `status` shows (`events`). A `DatabaseStore`.
public struct AgentStateStore: DatabaseStore {
    public let database: AgentDatabase

    public init(_ database: AgentDatabase) {
        self.database = database
    }

    /// Sets `key` to `value`; nil removes it.
    public func set(_ key: String, _ value: String?) throws {
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

    /// The value of `key`, nil when it is not set.
    public func value(_ key: String) throws -> String? {
        try connection.read { db in try String.fetchOne(db, sql: "SELECT value FROM agent_state WHERE key = ?", arguments: [key]) }
    }

    /// Sets `key` to `value` as JSON (ISO 8601 dates, sorted keys).
    public func setJSON<Value: Encodable>(_ key: String, _ value: Value) throws {
        try set(key, try Self.jsonText(value))
    }

    /// A value as `setJSON` stores it (for a writer that has only `set`).
    public static func jsonText<Value: Encodable>(_ value: Value) throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// The JSON value of `key` as `type`, nil when it is not set or does not decode (a
    /// value an older or newer version wrote differently is as good as none).
    public func json<Value: Decodable>(_ key: String, as type: Value.Type) -> Value? {
        guard let text = try? value(key) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(type, from: Data(text.utf8))
    }

    /// Logs an event that `status` shows (storage guard deletions and the like).
    public func recordEvent(code: AgentErrorCode?, message: String) throws {
        try writing {
            try connection.write { db in
                try db.execute(sql: "INSERT INTO events (at, code, message) VALUES (?, ?, ?)",
                               arguments: [clock.now().timeIntervalSince1970, code?.rawValue, message])
            }
        }
    }

    /// The newest event with `code`.
    public func latestEvent(code: AgentErrorCode) throws -> (at: Date, message: String)? {
        try connection.read { db in
            try Row.fetchOne(db, sql: "SELECT at, message FROM events WHERE code = ? ORDER BY id DESC LIMIT 1",
                             arguments: [code.rawValue])
                .map { (Date(timeIntervalSince1970: $0["at"]), $0["message"]) }
        }
    }
}

extension AgentDatabase {
    /// Named values, liveness, time evidence and events.
    public var agentState: AgentStateStore { AgentStateStore(self) }
}
