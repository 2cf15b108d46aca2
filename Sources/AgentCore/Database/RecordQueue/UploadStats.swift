import Foundation
import GRDB
import Platform

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

/// The `upload_stats` table (each stream's last attempt, last success and totals) and the
/// failed attempts by error code kept beside it in `agent_state`, for `status` and the metrics.
extension RecordQueue {
    /// Free bytes below which a batch is not sent: room for the WAL frames of marking the
    /// largest batch delivered (its rows' pages and the status index's), with a margin.
    static let deliveryMarkRoom: Int64 = 256 * 1024

    /// Records the outcome of one upload attempt of `stream`.
    public func recordUploadResult(stream: StreamName, success: Bool, result: String, code: AgentErrorCode?,
                                   records: Int, bytes: Int) throws {
        let now = clock.now().timeIntervalSince1970
        try writing {
            try connection.write { db in
                try Self.writeUploadResult(stream: stream, success: success, result: result, code: code,
                                           records: records, bytes: bytes, at: now, in: db)
            }
        }
    }

    /// The server stored `seqs` (a batch of `stream`, `bytes` on the wire): they become
    /// `uploaded` and the stream's stats say so, in one transaction, one fsync (two
    /// commits would cost two fsyncs per delivered batch).
    public func markDelivered(_ seqs: [Int64], stream: StreamName, result: String, bytes: Int) throws {
        let now = clock.now().timeIntervalSince1970
        try writing {
            try database.fsyncedWrite { db in
                try Self.execute(Self.setUploadedSQL, for: seqs, in: db) { [now, now, $0] }
                try Self.writeUploadResult(stream: stream, success: true, result: result, code: nil,
                                           records: seqs.count, bytes: bytes, at: now, in: db)
            }
        }
    }

    /// The probe before a batch goes out (`UploadQueue.noteSending`): the stream's last
    /// attempt time, committed with synchronous=NORMAL, so it costs a page of WAL and no
    /// fsync. It used to rewrite every record of the batch, fsynced: a third of an upload
    /// cycle's writes to the card.
    ///
    /// A one-page write can still fit where marking a batch delivered (its records' pages
    /// and the status index) cannot, so the probe also asks the file system for that room
    /// (`deliveryMarkRoom`): a batch sent that cannot be marked is sent again (queue.md).
    public func noteSending(stream: StreamName) throws {
        if let room = DiskSpace.availableBytes(at: path), room < Self.deliveryMarkRoom {
            try writing { throw DatabaseError(resultCode: .SQLITE_FULL, message: "\(room) bytes free, fewer than marking a batch delivered needs") }
        }
        let now = clock.now().timeIntervalSince1970
        try writing {
            try connection.writeWithoutTransaction { db in
                try AgentDatabase.withoutFsync(db) {
                    try db.inTransaction {
                        try db.execute(sql: """
                            INSERT INTO upload_stats (stream, last_attempt_at) VALUES (?1, ?2)
                            ON CONFLICT (stream) DO UPDATE SET last_attempt_at = ?2
                            """, arguments: [stream.rawValue, now])
                        return .commit
                    }
                }
            }
        }
    }

    /// The one statement that writes an attempt's outcome into `upload_stats` (and the
    /// failed attempts by code into `agent_state`).
    static func writeUploadResult(stream: StreamName, success: Bool, result: String, code: AgentErrorCode?,
                                  records: Int, bytes: Int, at now: Double, in db: Database) throws {
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

    /// Failed upload attempts by error code since the database was made.
    public func uploadErrorTotals() throws -> [String: Int64] {
        try connection.read { db in
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
        try connection.read { db in
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
}
