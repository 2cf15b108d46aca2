/// `[daemon]`: the daemon's own rhythm.
public struct DaemonConfig: Sendable, Equatable {
    /// Seconds between the daemon's maintenance rounds (the streams' and the uploader's
    /// liveness, systemd's watchdog, pause switches, the storage guard: docs/operations.md).
    /// Keep it well under the unit's WatchdogSec (120 s). `check_interval`; `health_interval` before (still read).
    public var checkInterval: Int = 30
    /// Believe the system clock whenever it reads after 2000, even when the kernel says it
    /// is not synchronised: for a machine without NTP whose clock the user knows is right.
    /// Off, records stamped from an unsynchronised clock are held until it is (docs/time.md).
    public var trustSystemClock = false

    public init() {}
}

extension DaemonConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.int("check_interval", \.checkInterval, range: 1...60, unit: "seconds").formerly("health_interval"),
         .bool("trust_system_clock", \.trustSystemClock)]
    }
}
