import Foundation

/// Delays between attempts to reach gpsd: doubling from `initial` up to `maximum`. The cap
/// is short because gpsd is a local service that comes back in seconds (a restart, or
/// socket activation at boot), and every attempt is one cheap local connect.
struct ReconnectBackoff: Sendable, Equatable {
    let initial: TimeInterval
    let maximum: TimeInterval
    private var next: TimeInterval

    init(initial: TimeInterval, maximum: TimeInterval) {
        self.initial = max(0.01, initial)
        self.maximum = max(self.initial, maximum)
        next = self.initial
    }

    /// The delay before the coming attempt; each call doubles the one after, up to the cap.
    mutating func nextDelay() -> TimeInterval {
        let delay = next
        next = min(maximum, next * 2)
        return delay
    }

    mutating func reset() {
        next = initial
    }
}
