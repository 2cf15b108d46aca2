import Foundation

/// Tells how long the machine was suspended since the last check: CLOCK_BOOTTIME counts
/// the time spent in suspend, CLOCK_MONOTONIC does not, so their difference grows by
/// exactly the suspended time. Nothing is polled: whoever wakes anyway (a timer that fires
/// once on resume) asks.
public struct SuspendDetector: Sendable {
    private var lastGap: Double?

    public init() {
        lastGap = Self.gap()
    }

    /// Seconds spent suspended since the previous call (or since `init`); nil when the
    /// clocks cannot be read.
    public mutating func suspendedSinceLastCheck() -> Double? {
        guard let gap = Self.gap() else { return nil }
        defer { lastGap = gap }
        return lastGap.map { max(0, gap - $0) }
    }

    /// Seconds of CLOCK_BOOTTIME since boot.
    public static func bootTime() -> Double? { Monotonic.seconds(of: CLOCK_BOOTTIME) }

    private static func gap() -> Double? {
        guard let boot = Monotonic.seconds(of: CLOCK_BOOTTIME), let monotonic = Monotonic.seconds(of: CLOCK_MONOTONIC) else { return nil }
        return boot - monotonic
    }
}
