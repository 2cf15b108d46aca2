/// `[daemon]`: the daemon's own rhythm.
public struct DaemonConfig: Sendable, Equatable {
    /// Seconds between health checks (which also feed systemd's watchdog and apply pause
    /// switches). Keep it well under the unit's WatchdogSec (120 s).
    public var healthInterval: Int = 30
    /// Believe the system clock whenever it reads after 2000, even when the kernel says it
    /// is not synchronised: for a machine without NTP whose clock the user knows is right.
    /// Off, records stamped from an unsynchronised clock are held until it is (README, Time).
    public var trustSystemClock = false

    public init() {}

    init(_ s: ConfigSection) throws {
        healthInterval = try s.int("health_interval", default: healthInterval, range: 1...60, unit: "seconds")
        trustSystemClock = try s.bool("trust_system_clock", default: trustSystemClock)
        try s.finish()
    }
}
