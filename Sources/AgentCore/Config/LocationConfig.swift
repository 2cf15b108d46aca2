/// `[location]`: fixes from gpsd.
public struct LocationConfig: Sendable, Equatable {
    public var enabled: Bool = true
    public var gpsdHost: String = "localhost"
    public var gpsdPort: Int = 2947
    /// Seconds between records.
    public var interval: Int = 10
    /// `[[location.exclude]]`: privacy zones where fixes are not written (or coarsened).
    public var exclude: [PrivacyZone] = []

    public init() {}

    init(_ s: ConfigSection) throws {
        enabled = try s.bool("enabled", default: enabled)
        gpsdHost = try s.string("gpsd_host", default: gpsdHost)
        gpsdPort = try s.int("gpsd_port", default: gpsdPort, range: 1...65_535)
        interval = try s.int("interval", default: interval, range: 1...3_600, unit: "seconds")
        exclude = try s.tables("exclude").map(PrivacyZone.init)
        try s.finish()
    }
}
