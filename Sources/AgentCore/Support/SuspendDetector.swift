#if canImport(Glibc)
import Glibc
#endif

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
    public static func bootTime() -> Double? { seconds(CLOCK_BOOTTIME) }

    private static func gap() -> Double? {
        guard let boot = seconds(CLOCK_BOOTTIME), let monotonic = seconds(CLOCK_MONOTONIC) else { return nil }
        return boot - monotonic
    }

    private static func seconds(_ clock: clockid_t) -> Double? {
        var spec = timespec()
        guard clock_gettime(clock, &spec) == 0 else { return nil }
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
