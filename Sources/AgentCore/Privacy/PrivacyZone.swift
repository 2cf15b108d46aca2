import Foundation

/// One `[[location.exclude]]`: a circle on the map where location is never recorded
/// (or, with `action = "coarsen"`, recorded only to about a kilometre).
public struct PrivacyZone: Sendable, Equatable {
    public enum Action: String, Sendable, Equatable {
        /// The fix is not written at all.
        case skip
        /// The fix is written rounded to 0.01° (about 1 km), without what would place it
        /// more closely (altitude, speed, course).
        case coarsen
    }

    /// What the zone does to the microphone (`microphone = "mute"`): nothing, or no
    /// capture while the latest fix lies in it (docs/streams/microphone.md, "Quiet hours and
    /// muted places").
    public enum Microphone: String, Sendable, Equatable {
        case capture
        case mute
    }

    public static let radiusRange = 50.0...10_000.0

    public var latitude: Double
    public var longitude: Double
    /// Metres.
    public var radius: Double
    public var name: String?
    public var action: Action
    public var microphone: Microphone

    public init(latitude: Double, longitude: Double, radius: Double, name: String? = nil, action: Action = .skip,
                microphone: Microphone = .capture) {
        self.microphone = microphone
        self.latitude = latitude
        self.longitude = longitude
        self.radius = radius
        self.name = name
        self.action = action
    }

    /// Whether a position lies in the zone (on its edge counts as inside).
    public func contains(latitude: Double, longitude: Double) -> Bool {
        Geodesy.distance(fromLatitude: self.latitude, longitude: self.longitude,
                         toLatitude: latitude, longitude: longitude) <= radius
    }

    /// For the log and `status`: the name, or where the zone is.
    public var label: String {
        name ?? String(format: "%.4f,%.4f", latitude, longitude)
    }
}

/// What to do with a fix, given every zone: a zone that skips wins over one that coarsens.
public struct PrivacyZones: Sendable, Equatable {
    public var zones: [PrivacyZone]

    public init(_ zones: [PrivacyZone]) { self.zones = zones }

    public enum Decision: Sendable, Equatable {
        case keep
        case skip(PrivacyZone)
        case coarsen(PrivacyZone)
    }

    public func decide(latitude: Double, longitude: Double) -> Decision {
        let inside = zones.filter { $0.contains(latitude: latitude, longitude: longitude) }
        if let zone = inside.first(where: { $0.action == .skip }) { return .skip(zone) }
        if let zone = inside.first { return .coarsen(zone) }
        return .keep
    }

    /// 0.01° steps: 1.1 km of latitude, and of longitude at the equator (less toward the
    /// poles, as there is less longitude to tell apart).
    public static func coarsen(_ degrees: Double) -> Double {
        (degrees * 100).rounded() / 100
    }

    /// The accuracy a coarsened fix is written with: the rounding's, or the fix's own when
    /// that was coarser already, so the record never claims more precision than it has.
    public static func coarsen(accuracy: Double?) -> Double {
        max(accuracy ?? 0, coarsenedAccuracy)
    }

    /// Metres: about what rounding to `coarsen`'s steps leaves of a position.
    public static let coarsenedAccuracy = 1_000.0
}

/// Distances on the WGS84 mean sphere: within 0.5 % of the ellipsoid, far closer than a
/// zone's 50 m minimum needs at these sizes.
public enum Geodesy {
    /// The IUGG mean radius of the WGS84 ellipsoid, metres.
    public static let earthRadius = 6_371_008.8

    /// Great-circle distance in metres (haversine: accurate at short distances, where the
    /// law of cosines loses digits; longitudes across the antimeridian need no care, as
    /// only the sine of half their difference enters).
    public static func distance(fromLatitude lat1: Double, longitude lon1: Double,
                                toLatitude lat2: Double, longitude lon2: Double) -> Double {
        let φ1 = lat1 * .pi / 180, φ2 = lat2 * .pi / 180
        let dφ = φ2 - φ1
        let dλ = (lon2 - lon1) * .pi / 180
        let a = sin(dφ / 2) * sin(dφ / 2) + cos(φ1) * cos(φ2) * sin(dλ / 2) * sin(dλ / 2)
        return 2 * earthRadius * asin(min(1, sqrt(a)))
    }
}
