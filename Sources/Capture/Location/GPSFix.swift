import AgentCore
import Foundation

/// gpsd's time of a fix, kept as gpsd gives it (a timespec) so that two reports of the
/// same fix compare equal exactly, without floating-point doubt.
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

/// Where a fix came from: the record's `location_source`, so the server's map can tell a
/// Wi-Fi position from a satellite one.
public enum FixSource: String, Sendable, Equatable {
    case gpsd
    case geoclue
}

/// One position fix as gpsd (or GeoClue) reported it. Optional fields are the ones the
/// source left unknown (NaN): they stay nil and never turn into 0.
public struct GPSFix: Sendable, Equatable {
    /// 2 (2D) or 3 (3D); a report below 2 is not a fix and never becomes one of these.
    /// GeoClue says nothing of it: its fixes count as 2D and carry no `fix_mode`.
    public var mode: Int
    public var time: FixTime
    public var latitude: Double
    public var longitude: Double
    /// Metres above mean sea level; only a 3D fix has one.
    public var altitude: Double?
    /// Metres per second over ground.
    public var speed: Double?
    /// Degrees from true north.
    public var course: Double?
    /// gpsd's `eph`, metres.
    public var horizontalAccuracy: Double?
    /// gpsd's `epv`, metres; only a 3D fix has one.
    public var verticalAccuracy: Double?
    /// From gpsd's latest SKY report on the same connection.
    public var satellitesUsed: Int?
    public var source: FixSource

    public init(mode: Int, time: FixTime, latitude: Double, longitude: Double, altitude: Double? = nil,
                speed: Double? = nil, course: Double? = nil, horizontalAccuracy: Double? = nil,
                verticalAccuracy: Double? = nil, satellitesUsed: Int? = nil, source: FixSource = .gpsd) {
        self.source = source
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
