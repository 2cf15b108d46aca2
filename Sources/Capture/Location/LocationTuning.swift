import Foundation

/// Internal timings of the location stream that users do not need to tune (the user's
/// knobs live in `[location]`). Tests shorten them.
public struct LocationTuning: Sendable, Equatable {
    /// First delay before reconnecting to gpsd; it doubles per failed attempt...
    public var reconnectInitial: TimeInterval = 0.5
    /// ...up to this, so gpsd coming back is noticed within this many seconds.
    public var reconnectMaximum: TimeInterval = 10
    /// Connected but no fix for this long makes the stream unhealthy (nil: three sampling
    /// intervals, at least two minutes, so a receiver's cold start does not count).
    public var staleFixAfter: TimeInterval?
    /// How long `stop()` waits for the reader thread. Only a TCP connect to a remote
    /// gpsd_host that does not answer can take longer; the thread then ends by itself.
    public var stopTimeout: TimeInterval = 5

    public init() {}

    func staleFixLimit(interval: Int) -> TimeInterval {
        staleFixAfter ?? max(120, 3 * TimeInterval(interval))
    }
}
