import AgentCore
import Foundation

/// A snapshot of the location stream for the supervisor and `status`.
public struct LocationStatus: Sendable, Equatable {
    /// Where the source in use is (gpsd's host:port, GeoClue's bus); nil until the stream
    /// has chosen one.
    public var address: String?
    /// The source in use (nil until the stream has chosen one) and, for source `auto`, why.
    public var source: FixSource?
    public var choice: String?
    /// The link to that source.
    public var link: LocationLink
    /// The source's time of the latest fix received (not necessarily written yet).
    public var lastFixTime: Date?
    /// Seconds since that fix arrived, by the wall clock.
    public var lastFixAge: TimeInterval?
    public var recordsWritten: Int
    public var lastRecordAt: Date?
    /// The latest failure to write a record, cleared by the next success.
    public var writeError: String?

    public init(address: String? = nil, source: FixSource? = nil, choice: String? = nil, link: LocationLink,
                lastFixTime: Date? = nil, lastFixAge: TimeInterval? = nil, recordsWritten: Int = 0,
                lastRecordAt: Date? = nil, writeError: String? = nil) {
        self.address = address
        self.source = source
        self.choice = choice
        self.link = link
        self.lastFixTime = lastFixTime
        self.lastFixAge = lastFixAge
        self.recordsWritten = recordsWritten
        self.lastRecordAt = lastRecordAt
        self.writeError = writeError
    }

    public var connected: Bool { link.isConnected }

    /// Healthy while connected, writing, and the source not quiet for too long: how long is
    /// too long is the source's to say (`quiet`, given since when the link is up), as no
    /// fix means no records and the user should hear why the stream went quiet.
    public func liveness(now: Date, quiet: (_ connectedSince: Date) -> Liveness) -> Liveness {
        switch link {
        case .idle:
            return .unhealthy(reason: "the location stream is not running")
        case .connecting:
            return .healthy
        case .unreachable(let reason, _):
            return .unhealthy(reason: reason)
        case .connected(let since):
            if let writeError {
                return .unhealthy(reason: "cannot write location records to the queue: \(writeError)")
            }
            return quiet(since)
        }
    }
}
