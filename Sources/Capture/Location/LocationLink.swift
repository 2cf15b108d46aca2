import Foundation

/// Where the link to the location source in use stands (gpsd's connection, GeoClue's session).
public enum LocationLink: Sendable, Equatable {
    /// The stream is not running.
    case idle
    /// The first attempt is under way (or the stream is still choosing its source).
    case connecting
    /// The source answers: gpsd is connected, GeoClue's client has started.
    case connected(since: Date)
    /// The source cannot be reached (or was lost) since `since`; `reason` says why and
    /// what to check.
    case unreachable(reason: String, since: Date)

    public var isConnected: Bool {
        if case .connected = self { return true }
        return false
    }
}
