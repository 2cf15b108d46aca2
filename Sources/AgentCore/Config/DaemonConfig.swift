/// `[daemon]`: the daemon's own rhythm.
public struct DaemonConfig: Sendable, Equatable {
    /// Seconds between health checks (which also feed systemd's watchdog and apply pause
    /// switches). Keep it well under the unit's WatchdogSec (120 s).
    public var healthInterval: Int = 30

    public init() {}

    init(_ s: ConfigSection) throws {
        healthInterval = try s.int("health_interval", default: healthInterval, range: 1...60, unit: "seconds")
        try s.finish()
    }
}
