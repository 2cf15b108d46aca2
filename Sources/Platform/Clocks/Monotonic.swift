import Foundation

/// The kernel's clocks read into seconds, written once. CLOCK_MONOTONIC is what every
/// deadline and wait of the agent's own threads is measured against, so a step of the wall
/// clock (NTP at boot, a clock set by hand) can neither stretch nor cut them short; it
/// stops while the machine is suspended. CLOCK_BOOTTIME runs on through suspend
/// (docs/time.md).
public enum Monotonic {
    /// Seconds on CLOCK_MONOTONIC.
    public static var now: TimeInterval {
        seconds(of: CLOCK_MONOTONIC) ?? ProcessInfo.processInfo.systemUptime
    }

    /// Seconds on CLOCK_BOOTTIME (the boot clock: counts suspended time); nil when the
    /// kernel cannot read it.
    public static var bootSeconds: TimeInterval? { seconds(of: CLOCK_BOOTTIME) }

    /// `now` as a function, for the initialisers that take a clock to read.
    @Sendable public static func seconds() -> TimeInterval { now }

    /// Seconds on `clock` (CLOCK_MONOTONIC, CLOCK_BOOTTIME, ...); nil when the kernel
    /// cannot read it.
    public static func seconds(of clock: clockid_t) -> TimeInterval? {
        var spec = timespec()
        guard clock_gettime(clock, &spec) == 0 else { return nil }
        return TimeInterval(spec.tv_sec) + TimeInterval(spec.tv_nsec) / 1e9
    }
}
