import Foundation
import GRDB

/// Which records the storage guard deletes, in the order it deletes them: what the server
/// already has, then what it refused, then pending audio (an hour is ~10 MB: it frees the
/// most space for the least lost meaning), and pending location and health only when no
/// audio is left (a day of fixes is ~2 MB and cannot be captured again).
public enum EvictionTier: String, CaseIterable, Sendable {
    case uploaded
    case failed
    case pendingAudio
    case pendingOther

    /// Deleting these loses data the server never had.
    public var losesData: Bool { self == .pendingAudio || self == .pendingOther }

    /// Oldest first within a tier; uploaded and failed by when they got that status (the
    /// term `status <> 'pending'` lets SQLite use the index of settled records, schema 4).
    var selection: String {
        switch self {
        case .uploaded:
            return "SELECT seq, stream, payload_bytes FROM records WHERE status = 'uploaded' AND status <> 'pending' ORDER BY status_changed_at, seq LIMIT ?"
        case .failed:
            return "SELECT seq, stream, payload_bytes FROM records WHERE status = 'failed' AND status <> 'pending' ORDER BY status_changed_at, seq LIMIT ?"
        case .pendingAudio:
            return "SELECT seq, stream, payload_bytes FROM records WHERE stream = 'microphone' AND status = 'pending' ORDER BY seq LIMIT ?"
        case .pendingOther:
            // One index scan per stream, merged: a plain "stream <> 'microphone' ORDER BY
            // seq" sorts every pending row (a temp b-tree of a million rows, which on a
            // full disk may not even find room for its temp file); this sorts at most
            // LIMIT rows per stream.
            let perStream = StreamName.allCases.filter { $0 != .microphone }.map { stream in
                "SELECT * FROM (SELECT seq, stream, payload_bytes FROM records WHERE stream = '\(stream.rawValue)' "
                    + "AND status = 'pending' ORDER BY seq LIMIT ?1)"
            }
            return perStream.joined(separator: " UNION ALL ") + " ORDER BY 1 LIMIT ?1"
        }
    }
}

/// What one deletion of a slice removed.
public struct EvictedSlice: Sendable, Equatable {
    public var records = 0
    public var payloadBytes: Int64 = 0
    public var byStream: [StreamName: Int] = [:]
}

extension Housekeeping {
    /// Deletes the oldest records of `tier`, as many as fit in `maxBytes` of payload
    /// (always at least one, at most `maxRecords`), in one transaction that also adds the
    /// pending ones to the per-stream eviction totals in `agent_state`.
    ///
    /// `secure_delete` is set to FAST for it: Debian's SQLite overwrites every freed page
    /// by default, which writes as much WAL as the records being deleted; FAST writes only
    /// the b-tree pages, which is what
    /// lets a deletion fit in the reserve on a full disk. The freed pages are cut off the
    /// file right after by `compact`, so little deleted audio stays on disk.
    public func evictSlice(_ tier: EvictionTier, maxBytes: Int64, maxRecords: Int = 5_000) throws -> EvictedSlice {
        var slice = EvictedSlice()
        let now = clock.now().timeIntervalSince1970
        try writing {
            try connection.writeWithoutTransaction { db in
                let previous = try Int.fetchOne(db, sql: "PRAGMA secure_delete") ?? 0
                let previousTemp = try Int.fetchOne(db, sql: "PRAGMA temp_store") ?? 0
                try db.execute(sql: "PRAGMA secure_delete = FAST")
                // Sorting and statement journals in memory: temp files may live on the full disk.
                try db.execute(sql: "PRAGMA temp_store = MEMORY")
                defer {
                    try? db.execute(sql: "PRAGMA secure_delete = \(previous)")
                    try? db.execute(sql: "PRAGMA temp_store = \(previousTemp)")
                }
                try db.inTransaction {
                    let rows = try Row.fetchCursor(db, sql: tier.selection, arguments: [max(1, maxRecords)])
                    var victims: [(seq: Int64, stream: String)] = []
                    while let row = try rows.next() {
                        let bytes: Int64 = row["payload_bytes"]
                        if !victims.isEmpty && slice.payloadBytes + bytes > maxBytes { break }
                        victims.append((row["seq"], row["stream"]))
                        slice.payloadBytes += bytes
                    }
                    let delete = try db.cachedStatement(sql: "DELETE FROM records WHERE seq = ?")
                    for victim in victims {
                        try delete.execute(arguments: [victim.seq])
                        if let stream = StreamName(rawValue: victim.stream) { slice.byStream[stream, default: 0] += 1 }
                    }
                    slice.records = victims.count
                    if tier.losesData {
                        for (stream, count) in slice.byStream {
                            try db.execute(sql: """
                                INSERT INTO agent_state (key, value, updated_at) VALUES (?1, CAST(?2 AS TEXT), ?3)
                                ON CONFLICT (key) DO UPDATE SET
                                    value = CAST(CAST(agent_state.value AS INTEGER) + ?2 AS TEXT), updated_at = ?3
                                """, arguments: [AgentStateKey.evicted(stream), count, now])
                        }
                    }
                    return .commit
                }
            }
        }
        // The deleted audio's files go now: the guard counts the space they free.
        try removeDeletedAttachments()
        return slice
    }

    /// Hands freed pages back to the file system in steps of `stepPages`: an incremental
    /// vacuum moves pages from the end of the file into free slots (each moved page is a
    /// WAL frame), then a TRUNCATE checkpoint copies them in, cuts the database file and
    /// empties the WAL. Steps keep the WAL of one step small enough for the reserve.
    /// Returns the largest WAL a step wrote (bytes), for the reserve's sizing.
    /// `keepingWAL`: the checkpoints leave the WAL file its blocks (see `checkpointWAL`).
    @discardableResult
    public func compact(stepPages: Int, keepingWAL: Bool = false) throws -> Int64 {
        let step = max(1, stepPages)
        var walPeak: Int64 = 0
        try writing {
            try connection.writeWithoutTransaction { db in
                var left = try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0
                while left > 0 {
                    try db.execute(sql: "PRAGMA incremental_vacuum(\(step))")
                    walPeak = max(walPeak, database.walBytes())
                    try AgentDatabase.checkpoint(db, keepingFile: keepingWAL)
                    let now = try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0
                    if now >= left { break }   // nothing moved (a reader holds the pages): try next pass
                    left = now
                }
            }
        }
        return walPeak
    }

    /// Copies the whole WAL into the database and truncates it to 0 bytes. On a full disk
    /// this comes first: the copy may grow the database (by at most the WAL's size), and
    /// once the WAL is empty the next deletion writes into fresh space it has just given
    /// back. A reader still on the old WAL makes it give up (SQLITE_BUSY), which is not
    /// an error here: the next pass tries again.
    /// Returns how much the database file grew (bytes).
    ///
    /// `keepingFile`: copies without truncating (a PASSIVE checkpoint), so the WAL keeps
    /// its blocks and the next transactions are written over them from its start. Below
    /// the floor, when another program may take every byte the file gives back, that is
    /// what lets the guard still write the deletions that make room for new captures.
    @discardableResult
    public func checkpointWAL(keepingFile: Bool = false) throws -> Int64 {
        let before = AgentDatabase.size(of: path)
        try writing {
            try connection.writeWithoutTransaction { db in try AgentDatabase.checkpoint(db, keepingFile: keepingFile) }
        }
        return max(0, AgentDatabase.size(of: path) - before)
    }

    /// Per stream, pending records the storage guard has deleted since the database was made.
    public func evictedTotals() throws -> [StreamName: Int64] {
        try connection.read { db in
            var totals: [StreamName: Int64] = [:]
            for stream in StreamName.allCases {
                let text = try String.fetchOne(db, sql: "SELECT value FROM agent_state WHERE key = ?",
                                               arguments: [AgentStateKey.evicted(stream)])
                totals[stream] = text.flatMap { Int64($0) } ?? 0
            }
            return totals
        }
    }
}
