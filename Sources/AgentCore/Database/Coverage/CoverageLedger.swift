import Foundation
import GRDB

/// One span of the coverage ledger: a stream's state from `start` to `end` (nil while it
/// is still the state now).
public struct CoverageSpan: Sendable, Equatable {
    public var stream: StreamName
    public var state: CoverageState
    public var start: Date
    public var end: Date?

    public init(stream: StreamName, state: CoverageState, start: Date, end: Date?) {
        self.stream = stream
        self.state = state
        self.start = start
        self.end = end
    }
}

/// The coverage ledger (`coverage_spans`, docs/operations.md#coverage): for each stream,
/// what it was doing over time. The daemon enters a state when it changes (`enter`), so the
/// ledger costs a write per change and no wake-up; a start closes what a killed process left
/// open (`closeAfterStart`). A `DatabaseStore`.
public struct CoverageLedger: DatabaseStore {
    public let database: AgentDatabase

    public init(_ database: AgentDatabase) {
        self.database = database
    }

    /// `stream` is in `state` from `at`: its open span, when in another state, ends there
    /// and a new one begins. Entering the state it is already in changes nothing.
    public func enter(_ stream: StreamName, _ state: CoverageState, at: Date) throws {
        let at = at.timeIntervalSince1970
        try writing {
            try connection.write { db in
                if let open = try Row.fetchOne(db, sql: """
                    SELECT id, state, started_at FROM coverage_spans WHERE stream = ? AND ended_at IS NULL ORDER BY id DESC LIMIT 1
                    """, arguments: [stream.rawValue]) {
                    if open["state"] as String == state.rawValue { return }
                    try db.execute(sql: "UPDATE coverage_spans SET ended_at = ? WHERE stream = ? AND ended_at IS NULL",
                                   arguments: [max(open["started_at"] as Double, at), stream.rawValue])
                }
                try db.execute(sql: "INSERT INTO coverage_spans (stream, state, started_at) VALUES (?, ?, ?)",
                               arguments: [stream.rawValue, state.rawValue, at])
            }
        }
    }

    /// At a start, before any state is entered: the spans an earlier process left open end.
    /// A `stopped` span (a clean stop) ends now. Any other was open when that process
    /// ended without stopping (killed, crashed, a power cut): it ends at the last moment
    /// known in it (for `captured`, the stream's newest record in the queue; otherwise the
    /// liveness the supervisor last stored, rewritten every few rounds), and a `lost` span
    /// covers the time from there to now. Returns the lost spans.
    @discardableResult
    public func closeAfterStart(now: Date) throws -> [CoverageSpan] {
        let now = now.timeIntervalSince1970
        var lost: [CoverageSpan] = []
        try writing {
            try connection.write { db in
                for row in try Row.fetchAll(db, sql: "SELECT id, stream, state, started_at FROM coverage_spans WHERE ended_at IS NULL") {
                    let id: Int64 = row["id"]
                    let started: Double = row["started_at"]
                    let state = CoverageState(rawValue: row["state"]) ?? .lost
                    guard state != .stopped, state != .lost, let stream = StreamName(rawValue: row["stream"]) else {
                        // A reload stops and starts at once: its stop leaves nothing to see.
                        if started >= now {
                            try db.execute(sql: "DELETE FROM coverage_spans WHERE id = ?", arguments: [id])
                        } else {
                            try db.execute(sql: "UPDATE coverage_spans SET ended_at = ? WHERE id = ?", arguments: [now, id])
                        }
                        continue
                    }
                    let known = try Self.lastKnown(db, stream: stream, state: state, since: started)
                    let end = min(max(started, known ?? started), max(started, now))
                    // Nothing known of the span (a power cut took its records): all of it is lost.
                    if end > started {
                        try db.execute(sql: "UPDATE coverage_spans SET ended_at = ? WHERE id = ?", arguments: [end, id])
                    } else {
                        try db.execute(sql: "DELETE FROM coverage_spans WHERE id = ?", arguments: [id])
                    }
                    if now > end {
                        try db.execute(sql: "INSERT INTO coverage_spans (stream, state, started_at, ended_at) VALUES (?, ?, ?, ?)",
                                       arguments: [stream.rawValue, CoverageState.lost.rawValue, end, now])
                        lost.append(CoverageSpan(stream: stream, state: .lost, start: Date(timeIntervalSince1970: end),
                                                 end: Date(timeIntervalSince1970: now)))
                    }
                }
            }
        }
        return lost
    }

    /// The last moment `stream` is known to have been in `state`, from what the daemon
    /// persists anyway: its newest record (a capture) or its last stored liveness.
    private static func lastKnown(_ db: Database, stream: StreamName, state: CoverageState, since: Double) throws -> Double? {
        if state == .captured {
            return try RecordStatus.allCases.compactMap { status in
                try Double.fetchOne(db, sql: """
                    SELECT enqueued_at FROM records WHERE stream = ? AND status = ? ORDER BY seq DESC LIMIT 1
                    """, arguments: [stream.rawValue, status.rawValue])
            }.max()
        }
        return try Double.fetchOne(db, sql: "SELECT checked_at FROM component_health WHERE component = ?", arguments: [stream.rawValue])
    }

    /// The spans of `streams` that overlap `from..<to`, oldest first; an open span ends at
    /// `min(to, now)`. Empty for a queue made before the ledger existed.
    public func spans(_ streams: [StreamName] = StreamName.allCases, from: Date, to: Date) throws -> [CoverageSpan] {
        let now = clock.now()
        return try connection.read { db in
            guard try db.tableExists("coverage_spans") else { return [] }
            let names = streams.map { "'\($0.rawValue)'" }.joined(separator: ", ")
            return try Row.fetchAll(db, sql: """
                SELECT stream, state, started_at, ended_at FROM coverage_spans
                WHERE stream IN (\(names)) AND started_at < ? AND (ended_at IS NULL OR ended_at > ?)
                ORDER BY started_at, id
                """, arguments: [to.timeIntervalSince1970, from.timeIntervalSince1970]).compactMap { row in
                guard let stream = StreamName(rawValue: row["stream"]), let state = CoverageState(rawValue: row["state"]) else { return nil }
                let end = (row["ended_at"] as Double?).map(Date.init(timeIntervalSince1970:))
                return CoverageSpan(stream: stream, state: state, start: Date(timeIntervalSince1970: row["started_at"]),
                                    end: end ?? max(Date(timeIntervalSince1970: row["started_at"]), min(to, now)))
            }
        }
    }

    /// The streams the ledger has any span of.
    public func streams() throws -> [StreamName] {
        try connection.read { db in
            guard try db.tableExists("coverage_spans") else { return [] }
            return try String.fetchAll(db, sql: "SELECT DISTINCT stream FROM coverage_spans").compactMap(StreamName.init(rawValue:)).sorted()
        }
    }

    /// Deletes the spans that ended before `before` (retention). Returns how many went.
    @discardableResult
    public func purge(endedBefore before: Date) throws -> Int {
        var deleted = 0
        try writing {
            try connection.write { db in
                try db.execute(sql: "DELETE FROM coverage_spans WHERE ended_at IS NOT NULL AND ended_at < ?",
                               arguments: [before.timeIntervalSince1970])
                deleted = db.changesCount
            }
        }
        return deleted
    }
}

extension AgentDatabase {
    /// The coverage ledger: each stream's spans of capture and of each reason it did not.
    public var coverage: CoverageLedger { CoverageLedger(self) }
}
