import Foundation

/// Run-time privacy switches: a paused stream captures nothing until resumed, or until
/// the end the user gave (`pause --for 1h`, `--until 18:00`). Kept in the database so
/// that `ariata-agent pause` from another process reaches the daemon and the state
/// survives restarts.
///
/// The end is a wall-clock time, not a countdown: a pause "until 18:00" ends at 18:00
/// whether the daemon ran, was restarted or the laptop slept in between. A timed pause
/// whose end has passed reads as not paused at once, before anyone clears it, so
/// `status` never shows a pause that is over and a daemon started after the end
/// captures from its first moment.
public struct PauseSwitches: Sendable {
    let database: AgentDatabase

    public init(database: AgentDatabase) { self.database = database }

    /// RFC 3339 time the stream was paused (present while it is).
    static func key(_ stream: StreamName) -> String { "paused.\(stream.rawValue)" }
    /// RFC 3339 time the pause ends by itself; absent for a pause until `resume`.
    static func untilKey(_ stream: StreamName) -> String { "paused.\(stream.rawValue).until" }

    /// One stream's pause as stored.
    public struct Pause: Sendable, Equatable {
        public var since: Date?
        /// nil: until `resume`.
        public var until: Date?
    }

    /// The stream's pause, nil when it is not paused at `now` (never paused, resumed, or
    /// its end has passed).
    public func pause(of stream: StreamName, at now: Date = Date()) throws -> Pause? {
        guard let since = try database.agentState.value(Self.key(stream)) else { return nil }
        let until = try database.agentState.value(Self.untilKey(stream)).flatMap(RFC3339.date(from:))
        if let until, until <= now { return nil }
        return Pause(since: RFC3339.date(from: since), until: until)
    }

    public func isPaused(_ stream: StreamName, at now: Date = Date()) throws -> Bool {
        try pause(of: stream, at: now) != nil
    }

    public func pausedStreams(at now: Date = Date()) throws -> Set<StreamName> {
        Set(try StreamName.allCases.filter { try isPaused($0, at: now) })
    }

    /// When the stream was paused, nil when it is not.
    public func pausedSince(_ stream: StreamName, at now: Date = Date()) throws -> Date? {
        try pause(of: stream, at: now)?.since
    }

    /// When the stream's pause ends by itself, nil when it is not paused or paused until `resume`.
    public func pausedUntil(_ stream: StreamName, at now: Date = Date()) throws -> Date? {
        try pause(of: stream, at: now)?.until
    }

    /// The earliest end among the timed pauses still running: when the daemon must look again.
    public func nextEnd(after now: Date = Date()) throws -> Date? {
        try StreamName.allCases.compactMap { try pausedUntil($0, at: now) }.min()
    }

    /// Pauses `streams`; `until` nil pauses until `resume`. Pausing a paused stream again
    /// replaces its end (so `pause` turns a timed pause into an open one) and keeps its start.
    public func pause(_ streams: [StreamName], until: Date? = nil, at now: Date = Date()) throws {
        for stream in streams {
            if try !isPaused(stream, at: now) {
                try database.agentState.set(Self.key(stream), RFC3339.string(from: now))
            }
            try database.agentState.set(Self.untilKey(stream), until.map(RFC3339.string(from:)))
        }
    }

    public func resume(_ streams: [StreamName]) throws {
        for stream in streams {
            try database.agentState.set(Self.key(stream), nil)
            try database.agentState.set(Self.untilKey(stream), nil)
        }
    }

    /// Clears the timed pauses whose end has passed (they already read as not paused);
    /// returns the streams cleared, for the log.
    @discardableResult
    public func clearEnded(at now: Date = Date()) throws -> [StreamName] {
        var ended: [StreamName] = []
        for stream in StreamName.allCases {
            guard try database.agentState.value(Self.key(stream)) != nil,
                  let until = try database.agentState.value(Self.untilKey(stream)).flatMap(RFC3339.date(from:)),
                  until <= now else { continue }
            try resume([stream])
            ended.append(stream)
        }
        return ended
    }
}
