import DBus
import Foundation

/// One position as GeoClue reports it (its Location object's properties).
struct GeoClueFix: Sendable, Equatable {
    var latitude: Double
    var longitude: Double
    /// Metres; nil when GeoClue's figure is not a measurement (see `minimumAccuracy`).
    var accuracy: Double?
    var altitude: Double?
    var speed: Double?
    var heading: Double?
    var time: FixTime
    /// How GeoClue made it, as far as it says (`GeoClueMethod`).
    var method: LocationMethod?

    /// nil when the properties do not make a position.
    init?(properties: [String: DBusValue]) {
        guard let latitude = properties["Latitude"]?.double, (-90.0...90.0).contains(latitude),
              let longitude = properties["Longitude"]?.double, (-180.0...180.0).contains(longitude),
              case .structure(let stamp)? = properties["Timestamp"], stamp.count == 2,
              let seconds = stamp[0].int, let microseconds = stamp[1].int, seconds > 0
        else { return nil }
        self.latitude = latitude
        self.longitude = longitude
        // GeoClue marks unknown values with -1 (speed, heading) and -DBL_MAX (altitude).
        accuracy = properties["Accuracy"]?.double.flatMap { $0 >= Self.minimumAccuracy && $0.isFinite ? $0 : nil }
        altitude = properties["Altitude"]?.double.flatMap { $0 > -1e300 && $0.isFinite ? $0 : nil }
        speed = properties["Speed"]?.double.flatMap { $0 >= 0 && $0.isFinite ? $0 : nil }
        heading = properties["Heading"]?.double.flatMap { (0.0...360.0).contains($0) ? $0 : nil }
        time = FixTime(seconds: seconds, nanoseconds: microseconds * 1_000)
        // Read before the floor below: an accuracy under it is still no IP lookup.
        method = GeoClueMethod.method(description: properties["Description"]?.string,
                                      accuracy: properties["Accuracy"]?.double.flatMap { $0.isFinite ? $0 : nil })
    }

    /// GeoClue's satellite sources (NMEA, a modem's GPS) turn HDOP into 0, 1 or 3 m by a
    /// rough table, which would read as a fix exact to the metre; no real position is that
    /// good, so a figure under this is left out rather than sent (docs/laptop.md).
    static let minimumAccuracy = 5.0

    /// GeoClue says nothing of 2D or 3D: no mode.
    var fix: LocationFix {
        LocationFix(mode: nil, time: time, latitude: latitude, longitude: longitude, altitude: altitude, speed: speed,
                    course: heading, horizontalAccuracy: accuracy, method: method, source: .geoclue)
    }
}
