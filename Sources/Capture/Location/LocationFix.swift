import AgentCore
import Foundation

/// A fix's time, kept as gpsd gives it (a timespec; GeoClue's microseconds fit too) so that
/// two reports of the same fix compare equal exactly, without floating-point doubt.
public struct FixTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var seconds: Int
    public var nanoseconds: Int

    public init(seconds: Int, nanoseconds: Int) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    public init(_ date: Date) {
        let whole = date.timeIntervalSince1970.rounded(.down)
        seconds = Int(whole)
        nanoseconds = Int(((date.timeIntervalSince1970 - whole) * 1e9).rounded())
    }

    public var date: Date {
        Date(timeIntervalSince1970: TimeInterval(seconds) + TimeInterval(nanoseconds) / 1e9)
    }

    public static func < (lhs: FixTime, rhs: FixTime) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }

    public var description: String { RFC3339.string(from: date) }
}

/// Which kind of source a fix came from. Each kind declares its own beside its source
/// (`FixSource.gpsd` in GPSD/, `.geoclue` in GeoClue/), so a new kind adds no case here.
public struct FixSource: Sendable, Hashable {
    /// The record's `location_source` and the status's `source`, so the server's map can
    /// tell a Wi-Fi position from a satellite one.
    public let rawValue: String
    /// The kind's name in log lines.
    public let name: String
    /// Its fixes' times come from outside this machine (the satellites'), so they stand on
    /// their own while the system clock is unset or not believed; otherwise a fix's time is
    /// the system clock's own and is held to the plain rule (`LocationRecord`).
    public let timeIsIndependent: Bool
    /// It reports fixes whether the device moves or not (a receiver), so the stream thins
    /// them while it stands still (`StationaryFilter`); a source that sends a fix only on
    /// a move needs no thinning.
    public let repeatsWhileStill: Bool

    public init(rawValue: String, name: String, timeIsIndependent: Bool, repeatsWhileStill: Bool = false) {
        self.rawValue = rawValue
        self.name = name
        self.timeIsIndependent = timeIsIndependent
        self.repeatsWhileStill = repeatsWhileStill
    }
}

/// One position fix as its source reported it. Optional fields are the ones the source
/// left unknown (NaN, or its own marker for unknown): they stay nil and never turn into 0.
public struct LocationFix: Sendable, Equatable {
    /// 2 (2D) or 3 (3D) when the source says (gpsd: a report below 2 is not a fix and
    /// never becomes one of these); nil when it does not (GeoClue): no `fix_mode` then.
    public var mode: Int?
    public var time: FixTime
    public var latitude: Double
    public var longitude: Double
    /// Metres above mean sea level; only a 3D fix has one.
    public var altitude: Double?
    /// Metres per second over ground.
    public var speed: Double?
    /// Degrees from true north.
    public var course: Double?
    /// Metres (gpsd's `eph`, GeoClue's accuracy).
    public var horizontalAccuracy: Double?
    /// Metres (gpsd's `epv`); only a 3D fix has one.
    public var verticalAccuracy: Double?
    /// Satellites used in the solution, when the source counts them.
    public var satellitesUsed: Int?
    /// How the source made it, when it says (GeoClue); nil for gpsd, whose fixes are a
    /// receiver's by definition and carry `fix_mode` instead.
    public var method: LocationMethod?
    public var source: FixSource

    public init(mode: Int?, time: FixTime, latitude: Double, longitude: Double, altitude: Double? = nil,
                speed: Double? = nil, course: Double? = nil, horizontalAccuracy: Double? = nil,
                verticalAccuracy: Double? = nil, satellitesUsed: Int? = nil, method: LocationMethod? = nil,
                source: FixSource) {
        self.source = source
        self.method = method
        self.mode = mode
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.speed = speed
        self.course = course
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
        self.satellitesUsed = satellitesUsed
    }
}
