import Foundation

/// A timer as its users see it: what `ReliableTimer` offers, so a component can be handed
/// Dispatch's timers in the daemon and a `VirtualScheduler`'s in a test
/// (docs/architecture.md, Timers).
///
/// Deadlines are wall-clock dates; a run due while the clock jumps forward past it runs
/// once, and a clock set backwards never postpones a run. Runs of one timer never
/// overlap, and a handler may reschedule or stop its own timer (that wins over the
/// automatic re-arm, which happens before the handler runs).
public protocol ScheduledTimer: AnyObject, Sendable {
    /// Starts (or restarts): first run after `firstAfter` seconds (nil: one interval),
    /// then every `interval` seconds.
    func start(interval: TimeInterval, firstAfter: TimeInterval?)
    /// Runs the handler once, `seconds` from now, then stops. Replaces whatever run was due.
    func runOnce(after seconds: TimeInterval)
    /// Moves the next run to `date`, keeping the interval. Does nothing when stopped.
    func reschedule(at date: Date)
    /// Moves the next run to `seconds` from now. Does nothing when stopped.
    func reschedule(after seconds: TimeInterval)
    /// Runs the handler as soon as possible; false (and nothing runs) when stopped.
    @discardableResult func fireNow() -> Bool
    /// No run starts after this returns.
    func stop()
    var isRunning: Bool { get }
    /// When the next run is due (wall clock), nil when stopped.
    var nextFireDate: Date? { get }
    /// How many times the handler has run since the timer was made.
    var fireCount: Int { get }
}

extension ScheduledTimer {
    public func start(interval: TimeInterval) {
        start(interval: interval, firstAfter: nil)
    }
}

/// Makes the timers of a component, and gives the clocks that never jump which its
/// timers and waits are measured on: Dispatch's timers and the kernel's clocks in the
/// daemon (`DispatchScheduler`), a clock the test moves in tests (`VirtualScheduler`).
/// Injected through initialisers with `DispatchScheduler()` as the default, so the
/// daemon's own path is `ReliableTimer` and `Monotonic` as it always was.
public protocol TimerScheduling: Sendable {
    /// A stopped timer whose handler runs `handler`; `label` names its queue.
    func makeTimer(label: String, handler: @escaping @Sendable () -> Void) -> any ScheduledTimer
    /// Seconds on CLOCK_MONOTONIC: never jumps, stops while the machine is suspended.
    func monotonicSeconds() -> TimeInterval
    /// Seconds on CLOCK_BOOTTIME: never jumps, counts the time suspended; nil when it
    /// cannot be read.
    func bootSeconds() -> TimeInterval?
}

/// The daemon's timers: one `ReliableTimer` each, nothing added around it; the kernel's
/// clocks.
public struct DispatchScheduler: TimerScheduling {
    public init() {}

    public func makeTimer(label: String, handler: @escaping @Sendable () -> Void) -> any ScheduledTimer {
        ReliableTimer(label: label, handler: handler)
    }

    public func monotonicSeconds() -> TimeInterval { Monotonic.now }

    public func bootSeconds() -> TimeInterval? { Monotonic.bootSeconds }
}

extension ReliableTimer: ScheduledTimer {}
