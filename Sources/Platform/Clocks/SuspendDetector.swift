import Foundation

/// Tells how long the machine was suspended since the last check: CLOCK_BOOTTIME counts
/// the time spent in suspend, CLOCK_MONOTONIC does not, so their difference grows by
/// exactly the suspended time. Nothing is polled: whoever wakes anyway (a timer that fires
/// once on resume) asks.
public struct SuspendDetector: Sendable {
    /// Where the two clocks are read: the kernel's (`DispatchScheduler`), or a test's
    /// `VirtualScheduler`, whose `suspend(for:)` is a suspend.
    private let clocks: any TimerScheduling
    private var lastGap: Double?

    public init(clocks: any TimerScheduling = DispatchScheduler()) {
        self.clocks = clocks
        lastGap = nil
        lastGap = gap()
    }

    /// Seconds spent suspended since the previous call (or since `init`); nil when the
    /// clocks cannot be read.
    public mutating func suspendedSinceLastCheck() -> Double? {
        guard let gap = gap() else { return nil }
        defer { lastGap = gap }
        return lastGap.map { max(0, gap - $0) }
    }

    private func gap() -> Double? {
        clocks.bootSeconds().map { $0 - clocks.monotonicSeconds() }
    }
}
