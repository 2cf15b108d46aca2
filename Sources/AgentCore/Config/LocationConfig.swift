/// `[location]`: fixes from gpsd or GeoClue (docs/streams/location.md, docs/laptop.md).
public struct LocationConfig: Sendable, Equatable {
    /// Where fixes come from.
    public enum Source: String, Sendable, CaseIterable {
        /// gpsd when it has a receiver, else GeoClue; gpsd is taken up when one appears.
        case auto
        case gpsd
        case geoclue
    }

    /// GeoClue's accuracy levels a person may ask for (its `GClueAccuracyLevel`).
    public enum AccuracyLevel: String, Sendable, CaseIterable {
        case city, neighborhood, street, exact

        /// The number GeoClue's D-Bus interface takes.
        public var geoClueValue: UInt32 {
            switch self {
            case .city: 4
            case .neighborhood: 5
            case .street: 6
            case .exact: 8
            }
        }
    }

    /// How the agent holds GeoClue (docs/laptop.md, "GeoClue at a laptop's cost").
    public enum GeoClueMode: String, Sendable, CaseIterable {
        /// A client held all along: fixes as the machine moves; GeoClue scans Wi-Fi every
        /// 10 s for it at street accuracy and finer.
        case hold
        /// A fix every `geoclue_fix_interval`, the client released between: one scan each.
        case perFix = "per-fix"
        /// `per-fix` on battery, `hold` on mains.
        case auto
    }

    public var enabled: Bool = true
    public var source: Source = .auto
    /// The accuracy asked of GeoClue (gpsd gives what the receiver has).
    public var accuracyLevel: AccuracyLevel = .exact
    /// GeoClue sends no new fix until the device has moved this many metres (0: any move).
    public var distanceThreshold: Int = 0
    public var gpsdHost: String = "localhost"
    public var gpsdPort: Int = 2947
    /// Seconds between records. Setting it (in the file or in code) makes it explicit.
    public var interval: Int = 10 { didSet { intervalIsExplicit = true } }
    /// Whether the file sets `interval`: only then does it win over the server's
    /// `update_interval_seconds` (docs/upload.md#the-servers-stream-switches).
    public var intervalIsExplicit = false
    /// Seconds between records while a receiver stands still (docs/streams/location.md);
    /// no longer than `interval` turns the stationary state off.
    public var stationaryInterval: Int = 60
    /// Metres a fix must lie from the last record to be written (0: any).
    public var minDistance: Int = 0
    /// Metres: a fix whose accuracy is coarser is not written (0: every fix is).
    public var maxAccuracy: Int = 1_000
    public var geoclueMode: GeoClueMode = .auto
    /// Seconds between the fixes taken in `per-fix` mode.
    public var geoclueFixInterval: Int = 300
    /// `[[location.exclude]]`: privacy zones where fixes are not written (or coarsened).
    public var exclude: [PrivacyZone] = []

    public init() {}

}

extension LocationConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.bool("enabled", \.enabled),
         .choice("source", \.source, allowed: Source.allCases),
         .choice("accuracy_level", \.accuracyLevel, allowed: AccuracyLevel.allCases),
         .int("distance_threshold", \.distanceThreshold, range: 0...100_000, unit: "metres"),
         .string("gpsd_host", \.gpsdHost),
         .int("gpsd_port", \.gpsdPort, range: 1...65_535),
         // Read only when given, and written only when given, so a default interval
         // leaves room for the server's (and stays the default after a rewrite).
         ConfigKey("interval", read: { s, t in
             let value = try s.int("interval", default: t.interval, range: 1...3_600, unit: "seconds")
             if s.contains("interval") { t.interval = value }
         }, write: { $0.intervalIsExplicit ? $0.interval : nil }),
         .int("stationary_interval", \.stationaryInterval, range: 1...86_400, unit: "seconds"),
         .int("min_distance", \.minDistance, range: 0...100_000, unit: "metres"),
         .int("max_accuracy", \.maxAccuracy, range: 0...10_000_000, unit: "metres"),
         .choice("geoclue_mode", \.geoclueMode, allowed: GeoClueMode.allCases),
         .int("geoclue_fix_interval", \.geoclueFixInterval, range: 30...86_400, unit: "seconds"),
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
         .choice("action", \.action, allowed: [.skip, .coarsen]),
         // Written only when it mutes, so a zone that never said it keeps not saying it.
         ConfigKey("microphone", read: { s, t in
             let raw = try s.choice("microphone", default: t.microphone.rawValue,
                                    allowed: [Microphone.capture.rawValue, Microphone.mute.rawValue])
             t.microphone = Microphone(rawValue: raw) ?? t.microphone
         }, write: { $0.microphone == .mute ? $0.microphone.rawValue : nil })]
    }
}
