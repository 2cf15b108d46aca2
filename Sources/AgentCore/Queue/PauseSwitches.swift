import Foundation

/// Run-time privacy switches: a paused stream captures nothing until resumed. Kept in
/// the database so that `ariata-agent pause` from another process reaches the daemon and
/// the state survives restarts.
public struct PauseSwitches: Sendable {
    let queue: SQLiteQueue

    public init(queue: SQLiteQueue) { self.queue = queue }

    static func key(_ stream: StreamName) -> String { "paused.\(stream.rawValue)" }

    public func isPaused(_ stream: StreamName) throws -> Bool {
        try queue.state(Self.key(stream)) != nil
    }

    public func pausedStreams() throws -> Set<StreamName> {
        Set(try StreamName.allCases.filter { try isPaused($0) })
    }

    /// When the stream was paused, nil when it is not.
    public func pausedSince(_ stream: StreamName) throws -> Date? {
        try queue.state(Self.key(stream)).flatMap(RFC3339.date(from:))
    }

    public func pause(_ streams: [StreamName], at now: Date = Date()) throws {
        for stream in streams where try !isPaused(stream) {
            try queue.setState(Self.key(stream), RFC3339.string(from: now))
        }
    }

    public func resume(_ streams: [StreamName]) throws {
        for stream in streams { try queue.setState(Self.key(stream), nil) }
    }
}
