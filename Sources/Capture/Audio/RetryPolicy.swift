import Foundation

/// How long a stream waits before trying a failed device again: doubling from `initial`
/// up to `maximum`, so a missing microphone costs a wake-up every half minute, not a spin.
public struct RetryPolicy: Sendable, Equatable {
    public var initial: TimeInterval
    public var maximum: TimeInterval

    public init(initial: TimeInterval = 1, maximum: TimeInterval = 30) {
        self.initial = initial
        self.maximum = max(initial, maximum)
    }

    /// The wait after `failures` failures in a row (1 for the first).
    public func delay(afterFailures failures: Int) -> TimeInterval {
        let doublings = min(max(failures - 1, 0), 30)
        return min(initial * pow(2, Double(doublings)), maximum)
    }
}
