import Foundation

/// Where the connection to gpsd stands.
public enum GPSDLinkState: Sendable, Equatable {
    /// The stream is not running.
    case idle
    /// The first attempt is under way.
    case connecting
    case connected(since: Date)
    /// gpsd cannot be reached (or the connection was lost) since `since`; `reason` says why
    /// and what to check.
    case unreachable(reason: String, since: Date)

    public var isConnected: Bool {
        if case .connected = self { return true }
        return false
    }
}
