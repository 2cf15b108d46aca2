import Foundation
import GRDB

/// A record the queue holds back from upload because its time is provisional.
public struct HeldRecord: Sendable, Equatable {
    public var seq: Int64
    public var stream: StreamName
    public var capturedAt: Date
    public var provisional: ProvisionalTime
    public var payload: Data
}

/// How many records are held, for `status` and the logs.
public struct HeldCounts: Sendable, Equatable {
    /// Held records captured in the boot that is running now (corrected once the clock is right).
    public var thisBoot = 0
    /// Held records from earlier boots (their boot clock is gone: see ClockCorrection).
    public var earlierBoots = 0
    public var byStream: [StreamName: Int] = [:]

    public var total: Int { thisBoot + earlierBoots }

    public init() {}
}

/// A held record's corrected form: its true capture time and the payload with its times
/// rewritten (or the same payload when it is released as it is).
public struct ReleasedRecord: Sendable, Equatable {
    public var seq: Int64
    public var capturedAt: Date
    public var payload: Data

    public init(seq: Int64, capturedAt: Date, payload: Data) {
        self.seq = seq
        self.capturedAt = capturedAt
        self.payload = payload
    }
}

extension RecordQueue {
    /// The SQL condition (on `records r`) that leaves held records out.
    static let notHeld = "NOT EXISTS (SELECT 1 FROM provisional_times p WHERE p.seq = r.seq)"

    /// Marks the record just inserted as held (same transaction as the insert).
    func holdProvisional(_ db: Database, seq: Int64, stream: StreamName, _ provisional: ProvisionalTime) throws {
        try db.execute(sql: "INSERT INTO provisional_times (seq, stream, boot_id, boot_time) VALUES (?, ?, ?, ?)",
                       arguments: [seq, stream.rawValue, provisional.bootID, provisional.bootTime])
    }

    /// Held records of boot `bootID` (or, with `otherThan`, of every other boot), oldest
    /// first, after `afterSeq`.
    public func heldRecords(bootID: String, otherThan: Bool = false, afterSeq: Int64 = 0, limit: Int) throws -> [HeldRecord] {
        try connection.read { db in
            try Row.fetchAll(db, sql: """
                SELECT r.seq, r.stream, r.captured_at, coalesce(pl.data, r.payload) AS payload, p.boot_id, p.boot_time
                FROM provisional_times p JOIN records r ON r.seq = p.seq LEFT JOIN payloads pl ON pl.seq = r.seq
                WHERE p.boot_id \(otherThan ? "<>" : "=") ? AND p.seq > ? AND r.status = 'pending'
                ORDER BY p.seq LIMIT ?
                """, arguments: [bootID, afterSeq, max(1, limit)]).compactMap { row in
                guard let stream = StreamName(rawValue: row["stream"]) else { return nil }
                return HeldRecord(seq: row["seq"], stream: stream, capturedAt: Date(timeIntervalSince1970: row["captured_at"]),
                                  provisional: ProvisionalTime(bootID: row["boot_id"], bootTime: row["boot_time"]),
                                  payload: row["payload"])
            }
        }
    }

    /// Puts the corrected times in place and lets the records go to the uploader, all in
    /// one transaction. The stored payload (without its attachment) keeps its length (a
    /// time is always 24 characters), so the byte counts kept by triggers stay right; a
    /// payload that would not is refused. A record another process (`sync` beside the
    /// daemon) released meanwhile is left as that one wrote it.
    public func release(_ records: [ReleasedRecord]) throws {
        guard !records.isEmpty else { return }
        try writing {
            try connection.write { db in
                let changed = try db.cachedStatement(sql: """
                    UPDATE records SET captured_at = ? WHERE seq = ?
                        AND length(coalesce((SELECT data FROM payloads WHERE payloads.seq = records.seq), payload)) = ?
                        AND EXISTS (SELECT 1 FROM provisional_times p WHERE p.seq = records.seq)
                    """)
                let payload = try db.cachedStatement(sql: "UPDATE payloads SET data = ? WHERE seq = ?")
                // A row written before schema 3 keeps its payload in the row.
                let inline = try db.cachedStatement(sql: "UPDATE records SET payload = ? WHERE seq = ?")
                for record in records {
                    try changed.execute(arguments: [record.capturedAt.timeIntervalSince1970, record.seq, record.payload.count])
                    guard db.changesCount == 1 else { continue }
                    try payload.execute(arguments: [record.payload, record.seq])
                    if db.changesCount == 0 { try inline.execute(arguments: [record.payload, record.seq]) }
                    try db.execute(sql: "DELETE FROM provisional_times WHERE seq = ?", arguments: [record.seq])
                }
            }
        }
    }

    /// Records and payload bytes of `stream` that are held (pending, but not for upload yet).
    public func heldTotals(stream: StreamName) throws -> (records: Int, bytes: Int64) {
        try connection.read { db in
            guard try db.tableExists("provisional_times") else { return (0, 0) }
            let row = try Row.fetchOne(db, sql: """
                SELECT count(*) AS n, coalesce(sum(r.payload_bytes), 0) AS bytes
                FROM provisional_times p JOIN records r ON r.seq = p.seq
                WHERE p.stream = ? AND r.status = 'pending'
                """, arguments: [stream.rawValue])
            return (row?["n"] ?? 0, row?["bytes"] ?? 0)
        }
    }

    /// Held records by boot and stream. Works on a read-only queue; a database from before
    /// schema 2 holds nothing.
    public func heldCounts(currentBootID: String?) throws -> HeldCounts {
        try connection.read { db in
            var counts = HeldCounts()
            guard try db.tableExists("provisional_times") else { return counts }
            let rows = try Row.fetchAll(db, sql: "SELECT stream, boot_id, count(*) AS n FROM provisional_times GROUP BY stream, boot_id")
            for row in rows {
                let n: Int = row["n"]
                let boot: String = row["boot_id"]
                if let current = currentBootID, boot == current { counts.thisBoot += n } else { counts.earlierBoots += n }
                if let stream = StreamName(rawValue: row["stream"]) { counts.byStream[stream, default: 0] += n }
            }
            return counts
        }
    }
}
