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

/// Upload bookkeeping of one stream, for `status`.
public struct UploadStats: Sendable, Equatable {
    public var stream: StreamName
    public var lastAttemptAt: Date?
    public var lastSuccessAt: Date?
    public var lastResult: String?
    public var lastErrorCode: AgentErrorCode?
    public var recordsSent: Int64
    public var bytesSent: Int64
}

/// The small tables beside the queue that `status` reads: component health, upload
/// bookkeeping and named state (pause switches and the like).
extension SQLiteQueue {
    public func storeHealth(component: String, _ health: StreamHealth) throws {
        try store(HealthCheckWrite(health: [component: health]))
    }

    public func storedHealth() throws -> [StoredHealth] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM component_health ORDER BY component").map { row in
                StoredHealth(component: row["component"], state: row["state"], reason: row["reason"],
                             code: (row["code"] as String?).flatMap(AgentErrorCode.init(rawValue:)),
                             checkedAt: Date(timeIntervalSince1970: row["checked_at"]))
            }
        }
    }

    /// Records the outcome of one upload attempt of `stream`.
    public func recordUploadResult(stream: StreamName, success: Bool, result: String, code: AgentErrorCode?,
                                   records: Int, bytes: Int) throws {
        let now = clock.now().timeIntervalSince1970
        try writing {
            try pool.write { db in
                try db.execute(sql: """
                    INSERT INTO upload_stats (stream, last_attempt_at, last_success_at, last_result, last_error_code,
                                              records_sent, bytes_sent)
                    VALUES (?1, ?2, CASE WHEN ?3 THEN ?2 END, ?4, ?5, CASE WHEN ?3 THEN ?6 ELSE 0 END, CASE WHEN ?3 THEN ?7 ELSE 0 END)
                    ON CONFLICT (stream) DO UPDATE SET
                        last_attempt_at = ?2,
                        last_success_at = CASE WHEN ?3 THEN ?2 ELSE last_success_at END,
                        last_result = ?4,
                        last_error_code = ?5,
                        records_sent = records_sent + CASE WHEN ?3 THEN ?6 ELSE 0 END,
                        bytes_sent = bytes_sent + CASE WHEN ?3 THEN ?7 ELSE 0 END
                    """, arguments: [stream.rawValue, now, success, result, code?.rawValue, records, bytes])
                // Failed attempts by error code, for the metrics (a running total since the
                // database was made; same transaction, so it never disagrees with the stats).
                if !success, let code {
                    try db.execute(sql: """
                        INSERT INTO agent_state (key, value, updated_at) VALUES (?1, '1', ?2)
                        ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(agent_state.value AS INTEGER) + 1 AS TEXT), updated_at = ?2
                        """, arguments: [AgentStateKey.uploadErrors(code), now])
                }
            }
        }
    }

    /// Failed upload attempts by error code since the database was made.
    public func uploadErrorTotals() throws -> [String: Int64] {
        try pool.read { db in
            var totals: [String: Int64] = [:]
            for code in AgentErrorCode.allCases {
                if let text = try String.fetchOne(db, sql: "SELECT value FROM agent_state WHERE key = ?",
                                                  arguments: [AgentStateKey.uploadErrors(code)]), let n = Int64(text) {
                    totals[code.rawValue] = n
                }
            }
            return totals
        }
    }

    public func uploadStats() throws -> [UploadStats] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM upload_stats ORDER BY stream").compactMap { row in
                guard let stream = StreamName(rawValue: row["stream"]) else { return nil }
                return UploadStats(
                    stream: stream,
                    lastAttemptAt: (row["last_attempt_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
                    lastSuccessAt: (row["last_success_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
                    lastResult: row["last_result"],
                    lastErrorCode: (row["last_error_code"] as String?).flatMap(AgentErrorCode.init(rawValue:)),
                    recordsSent: row["records_sent"], bytesSent: row["bytes_sent"])
            }
        }
    }

    public func setState(_ key: String, _ value: String?) throws {
        try writing {
            try pool.write { db in
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
        try pool.read { db in try String.fetchOne(db, sql: "SELECT value FROM agent_state WHERE key = ?", arguments: [key]) }
    }
}
