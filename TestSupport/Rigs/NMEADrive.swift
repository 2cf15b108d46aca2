import Foundation

/// One second of a synthetic drive: what the receiver "knows", already rounded to what
/// NMEA can carry, so a test can compare what comes out of gpsd with these values.
public struct DriveEpoch: Sendable, Equatable {
    /// Whole seconds.
    public var time: Date
    public var hasFix: Bool
    public var latitude: Double
    public var longitude: Double
    /// Metres above mean sea level.
    public var altitude: Double
    /// Metres per second (NMEA carries knots with three decimals).
    public var speed: Double
    /// Degrees from true north, one decimal.
    public var course: Double
    public var satellitesUsed: Int
    public var hdop: Double
    public var vdop: Double
    public var pdop: Double
}

/// A synthetic drive and its NMEA 0183 sentences (GGA, GSA, GSV, RMC per epoch, with
/// correct checksums), as a receiver on a serial line would send them.
public enum NMEADrive {
    public static let metresPerSecondPerKnot = 1852.0 / 3600.0

    /// `epochs` seconds of driving from `origin`, starting at `start` (rounded down to a
    /// whole second): speed swings between 5 and 15 m/s, the course turns slowly, altitude
    /// climbs and falls, satellites and DOPs vary so every field changes between epochs.
    public static func synthetic(epochs: Int, start: Date,
                                 origin: (latitude: Double, longitude: Double) = (52.520_008, 13.404_954),
                                 hasFix: Bool = true) -> [DriveEpoch] {
        let t0 = start.timeIntervalSince1970.rounded(.down)
        var latitude = origin.latitude
        var longitude = origin.longitude
        var result: [DriveEpoch] = []
        for i in 0..<epochs {
            let phase = Double(i)
            let speedKnots = (((10 + 5 * sin(phase / 7)) / metresPerSecondPerKnot) * 1000).rounded() / 1000
            let speed = speedKnots * metresPerSecondPerKnot
            let course = ((30 + 3 * phase).truncatingRemainder(dividingBy: 360) * 10).rounded() / 10
            let hdop = ((0.8 + 0.4 * (1 + sin(phase / 5))) * 10).rounded() / 10
            result.append(DriveEpoch(
                time: Date(timeIntervalSince1970: t0 + phase),
                hasFix: hasFix,
                latitude: quantized(latitude),
                longitude: quantized(longitude),
                altitude: ((35 + 5 * sin(phase / 11)) * 10).rounded() / 10,
                speed: speed,
                course: course,
                satellitesUsed: 6 + i % 5,
                hdop: hdop,
                vdop: ((hdop * 1.6) * 10).rounded() / 10,
                pdop: ((hdop * 1.9) * 10).rounded() / 10))
            let radians = course * .pi / 180
            latitude += speed * cos(radians) / 111_320
            longitude += speed * sin(radians) / (111_320 * cos(latitude * .pi / 180))
        }
        return result
    }

    /// The sentences of one epoch, CR LF terminated. A no-fix epoch has empty position
    /// fields, GGA quality 0, GSA mode 1 and RMC status V, as receivers send them.
    public static func sentences(for epoch: DriveEpoch) -> String {
        let hms = timeField(epoch.time)
        let dmy = dateField(epoch.time)
        guard epoch.hasFix else {
            return [
                "GPGGA,\(hms),,,,,0,00,99.99,,,,,,",
                "GPGSA,A,1,,,,,,,,,,,,,99.99,99.99,99.99",
                "GPRMC,\(hms),V,,,,,,,\(dmy),,,N",
            ].map(sentence).joined()
        }
        let lat = latitudeField(epoch.latitude)
        let lon = longitudeField(epoch.longitude)
        let used = satellites.prefix(epoch.satellitesUsed).map { String(format: "%02d", $0.prn) }
        let usedFields = (used + Array(repeating: "", count: 12 - used.count)).joined(separator: ",")
        var lines = [
            "GPGGA,\(hms),\(lat),\(lon),1," + String(format: "%02d,%.1f,%.1f", epoch.satellitesUsed, epoch.hdop, epoch.altitude)
                + ",M,46.9,M,,",
            "GPGSA,A,3,\(usedFields)," + String(format: "%.1f,%.1f,%.1f", epoch.pdop, epoch.hdop, epoch.vdop),
        ]
        lines += satellitesInView()
        lines.append("GPRMC,\(hms),A,\(lat),\(lon),"
                     + String(format: "%.3f,%.1f", epoch.speed / metresPerSecondPerKnot, epoch.course)
                     + ",\(dmy),,,A")
        return lines.map(sentence).joined()
    }

    /// `$body*CS\r\n`, the checksum being the XOR of the body's bytes.
    public static func sentence(_ body: String) -> String {
        let checksum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
        return "$" + body + String(format: "*%02X\r\n", checksum)
    }

    /// NMEA carries minutes with five decimals: 1/6,000,000 of a degree.
    public static func quantized(_ degrees: Double) -> Double {
        (degrees * 6_000_000).rounded() / 6_000_000
    }

    private static let satellites: [(prn: Int, elevation: Int, azimuth: Int, snr: Int)] = [
        (2, 62, 45, 44), (5, 48, 120, 42), (7, 35, 200, 40), (9, 71, 300, 45),
        (12, 25, 80, 38), (15, 55, 160, 41), (18, 20, 240, 36), (21, 40, 330, 39),
        (24, 15, 10, 33), (26, 30, 100, 37), (29, 50, 280, 43), (31, 10, 190, 30),
    ]

    private static func satellitesInView() -> [String] {
        let groups = stride(from: 0, to: satellites.count, by: 4).map { Array(satellites[$0..<min($0 + 4, satellites.count)]) }
        return groups.enumerated().map { index, group in
            let fields = group.map { String(format: "%02d,%02d,%03d,%02d", $0.prn, $0.elevation, $0.azimuth, $0.snr) }
            return "GPGSV,\(groups.count),\(index + 1),\(satellites.count)," + fields.joined(separator: ",")
        }
    }

    private static func utc(_ date: Date) -> tm {
        var t = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&t, &parts)
        return parts
    }

    private static func timeField(_ date: Date) -> String {
        let p = utc(date)
        return String(format: "%02d%02d%02d.00", p.tm_hour, p.tm_min, p.tm_sec)
    }

    private static func dateField(_ date: Date) -> String {
        let p = utc(date)
        return String(format: "%02d%02d%02d", p.tm_mday, p.tm_mon + 1, p.tm_year % 100)
    }

    private static func latitudeField(_ value: Double) -> String {
        let (degrees, minutes) = split(abs(value))
        return String(format: "%02d%08.5f", degrees, minutes) + (value >= 0 ? ",N" : ",S")
    }

    private static func longitudeField(_ value: Double) -> String {
        let (degrees, minutes) = split(abs(value))
        return String(format: "%03d%08.5f", degrees, minutes) + (value >= 0 ? ",E" : ",W")
    }

    private static func split(_ degrees: Double) -> (Int, Double) {
        let whole = Int(degrees.rounded(.down))
        // Rounded to the five decimals printed, so 59.999995 does not print as 60.00000.
        var minutes = ((degrees - Double(whole)) * 60 * 100_000).rounded() / 100_000
        var wholeDegrees = whole
        if minutes >= 60 {
            minutes -= 60
            wholeDegrees += 1
        }
        return (wholeDegrees, minutes)
    }
}
