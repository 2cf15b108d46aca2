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

}

extension LocationConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.bool("enabled", \.enabled),
         .string("gpsd_host", \.gpsdHost),
         .int("gpsd_port", \.gpsdPort, range: 1...65_535),
         .int("interval", \.interval, range: 1...3_600, unit: "seconds"),
         .tables("exclude", \.exclude)]
    }
}

/// `[[location.exclude]]`.
extension PrivacyZone: ConfigTable {
    /// The centre and radius have no default: reading them fails when they are not given.
    static var defaults: Self { Self(latitude: 0, longitude: 0, radius: radiusRange.lowerBound) }
    static var keys: [ConfigKey<Self>] {
        [.requiredDouble("latitude", \.latitude, range: -90...90, unit: "degrees"),
         .requiredDouble("longitude", \.longitude, range: -180...180, unit: "degrees"),
         .requiredDouble("radius", \.radius, range: radiusRange, unit: "metres"),
         .optionalString("name", \.name),
         .choice("action", \.action, allowed: [.skip, .coarsen])]
    }
}
