import Foundation
import GRDB

/// Which records `ariata-agent purge` deletes: some streams, some statuses, optionally
/// only those captured before a time.
public struct PurgeSelection: Sendable, Equatable {
    public var streams: [StreamName]
    public var statuses: [RecordStatus]
    /// Only records captured before this time; nil for all.
    public var capturedBefore: Date?

    public init(streams: [StreamName] = StreamName.allCases, statuses: [RecordStatus] = RecordStatus.allCases,
                capturedBefore: Date? = nil) {
        self.streams = streams
        self.statuses = statuses
        self.capturedBefore = capturedBefore
    }

    /// The WHERE clause and its arguments (stream and status come from enums, never from input).
    var filter: (sql: String, arguments: StatementArguments) {
        let streams = self.streams.map { "'\($0.rawValue)'" }.joined(separator: ", ")
        let statuses = self.statuses.map { "'\($0.rawValue)'" }.joined(separator: ", ")
        var sql = "stream IN (\(streams)) AND status IN (\(statuses))"
        var arguments: StatementArguments = []
        if let capturedBefore {
            sql += " AND captured_at < ?"
            arguments += [capturedBefore.timeIntervalSince1970]
        }
        return (sql, arguments)
    }

    /// "microphone pending and failed records captured before 2026-…", for the event and the prompt.
    public var description: String {
        let streams = self.streams.count == StreamName.allCases.count ? "all" : self.streams.map(\.rawValue).joined(separator: " and ")
        let statuses = self.statuses.count == RecordStatus.allCases.count ? "" : self.statuses.map(\.rawValue).joined(separator: " and ") + " "
        return "\(streams) \(statuses)records" + (capturedBefore.map { " captured before \(RFC3339.string(from: $0))" } ?? "")
    }
}

/// What a purge deleted (or, as a preview, would delete).
public struct PurgeCount: Sendable, Equatable {
    public var records = 0
    /// Payload bytes of the records (what they held; the file shrinks by about as much).
    public var payloadBytes: Int64 = 0
    public var byStream: [StreamName: Int] = [:]

    public init(records: Int = 0, payloadBytes: Int64 = 0, byStream: [StreamName: Int] = [:]) {
        self.records = records
        self.payloadBytes = payloadBytes
        self.byStream = byStream
    }
}

extension Housekeeping {
    /// The `events.code` of a purge (the E-codes are for errors; a purge is the user's act).
    static let purgeEventCode = "purge"

    /// How many records, and how many payload bytes, `selection` holds now.
    public func purgePreview(_ selection: PurgeSelection) throws -> PurgeCount {
        let (sql, arguments) = selection.filter
        return try connection.read { db in
            var count = PurgeCount()
            for row in try Row.fetchAll(db, sql: """
                SELECT stream, COUNT(*) AS n, COALESCE(SUM(payload_bytes), 0) AS bytes FROM records WHERE \(sql) GROUP BY stream
                """, arguments: arguments) {
                guard let stream = StreamName(rawValue: row["stream"]) else { continue }
                let n: Int = row["n"]
                count.byStream[stream] = n
                count.records += n
                count.payloadBytes += row["bytes"]
            }
            return count
        }
    }

    /// Deletes the records of `selection`, in transactions of `batch` rows so that the
    /// daemon, writing beside it, never waits long for the lock (each capture waits at
    /// most one batch; SQLite's busy timeout is 10 s). The freed pages are overwritten
    /// (`secure_delete`: what the user deletes does not linger in the file) and handed
    /// back to the file system, and the purge is recorded as an event `status` shows.
    ///
    /// A record the uploader has in a request at that moment may still reach the server:
    /// the request is already on its way; marking it delivered afterwards finds nothing.
    @discardableResult
    public func purge(_ selection: PurgeSelection, batch: Int = 2_000) throws -> PurgeCount {
        let (sql, arguments) = selection.filter
        var total = PurgeCount()
        try writing {
            try connection.writeWithoutTransaction { db in
                let previous = try Int.fetchOne(db, sql: "PRAGMA secure_delete") ?? 0
                try db.execute(sql: "PRAGMA secure_delete = ON")
                defer { try? db.execute(sql: "PRAGMA secure_delete = \(previous)") }
                while true {
                    var deleted = 0
                    try db.inTransaction {
                        let rows = try Row.fetchAll(db, sql: "SELECT seq, stream, payload_bytes FROM records WHERE \(sql) ORDER BY seq LIMIT \(max(1, batch))",
                                                    arguments: arguments)
                        let delete = try db.cachedStatement(sql: "DELETE FROM records WHERE seq = ?")
                        for row in rows {
                            try delete.execute(arguments: [row["seq"] as Int64])
                            if let stream = StreamName(rawValue: row["stream"]) { total.byStream[stream, default: 0] += 1 }
                            total.payloadBytes += row["payload_bytes"] as Int64
                        }
                        deleted = rows.count
                        return .commit
                    }
                    total.records += deleted
                    if deleted < max(1, batch) { break }
                }
            }
        }
        try removeDeletedAttachments()
        try compact(stepPages: 2_048)
        let message = "deleted \(total.records) \(selection.description) (\(total.payloadBytes) bytes)"
        try writing {
            try connection.write { db in
                try db.execute(sql: "INSERT INTO events (at, code, message) VALUES (?, ?, ?)",
                               arguments: [clock.now().timeIntervalSince1970, Self.purgeEventCode, message])
            }
        }
        logger.notice("purge: \(message)")
        return total
    }

    /// The latest purge, for `status`.
    public func latestPurge() throws -> (at: Date, message: String)? {
        try connection.read { db in
            try Row.fetchOne(db, sql: "SELECT at, message FROM events WHERE code = ? ORDER BY id DESC LIMIT 1",
                             arguments: [Self.purgeEventCode])
                .map { (Date(timeIntervalSince1970: $0["at"]), $0["message"]) }
        }
    }
}
