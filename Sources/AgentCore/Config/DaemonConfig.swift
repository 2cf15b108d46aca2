/// `[daemon]`: the daemon's own rhythm.
public struct DaemonConfig: Sendable, Equatable {
    /// Seconds between health checks (which also feed systemd's watchdog and apply pause
    /// switches). Keep it well under the unit's WatchdogSec (120 s).
    public var healthInterval: Int = 30
    /// Believe the system clock whenever it reads after 2000, even when the kernel says it
    /// is not synchronised: for a machine without NTP whose clock the user knows is right.
    /// Off, records stamped from an unsynchronised clock are held until it is (docs/time.md).
    public var trustSystemClock = false

    public init() {}

}

extension DaemonConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.int("health_interval", \.healthInterval, range: 1...60, unit: "seconds"),
         .bool("trust_system_clock", \.trustSystemClock)]
    }
}
