import AgentCore
import Foundation

/// A snapshot of the location stream for the supervisor and `status`.
public struct LocationStatus: Sendable, Equatable {
    /// gpsd's host and port.
    public var endpoint: String
    /// The source in use (nil until the stream has chosen one) and, for source `auto`, why.
    public var source: FixSource?
    public var choice: String?
    /// The link to that source (GeoClue's too: connected once it gives fixes).
    public var link: GPSDLinkState
    /// gpsd's time of the latest fix received (not necessarily written yet).
    public var lastFixTime: Date?
    /// Seconds since that fix arrived, by the wall clock.
    public var lastFixAge: TimeInterval?
    public var recordsWritten: Int
    public var lastRecordAt: Date?
    /// The latest failure to write a record, cleared by the next success.
    public var writeError: String?

    public init(endpoint: String, source: FixSource? = nil, choice: String? = nil, link: GPSDLinkState,
                lastFixTime: Date? = nil, lastFixAge: TimeInterval? = nil, recordsWritten: Int = 0,
                lastRecordAt: Date? = nil, writeError: String? = nil) {
        self.endpoint = endpoint
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

    /// Healthy while connected, writing, and fixes keep arriving. A receiver without a fix
    /// for longer than `staleFixAfter` counts as unhealthy: no fix means no records, and
    /// the user should hear why the stream went quiet.
    public func health(now: Date, staleFixAfter: TimeInterval) -> Liveness {
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
            if source == .geoclue {
                // GeoClue sends a fix only when the device moves: only none at all counts.
                let quiet = now.timeIntervalSince(since)
                guard lastFixAge == nil, quiet > staleFixAfter else { return .healthy }
                return .unhealthy(reason: "GeoClue has given no position in \(Int(quiet)) s since it started: "
                    + "check that Wi-Fi is on (GeoClue locates by the networks in reach) or that its sources are "
                    + "enabled in /etc/geoclue/geoclue.conf (docs/laptop.md)")
            }
            let quietSince = lastFixAge.map { now.addingTimeInterval(-$0) } ?? since
            let quiet = now.timeIntervalSince(quietSince)
            guard quiet > staleFixAfter else { return .healthy }
            let what = lastFixAge == nil ? "no fix since connecting" : "no fix"
            return .unhealthy(reason: "connected to gpsd at \(endpoint) but \(what) for \(Int(quiet)) s; "
                + "check the receiver is attached and sees the sky (cgps or gpsmon show what gpsd gets)")
        }
    }
}
