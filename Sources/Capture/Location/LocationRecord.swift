import AgentCore
import Foundation

/// Why a fix was not turned into a record.
enum LocationRecordError: Error, Equatable, CustomStringConvertible {
    case timeOutOfRange(fixTime: String, now: String, source: FixSource)

    var description: String {
        switch self {
        case .timeOutOfRange(let fixTime, let now, let source):
            return "\(source.name)'s fix time \(fixTime) is before 2000 or more than 5 minutes ahead of the "
                + "system clock (\(now)); the server would reject it, so it is not written. "
                + "Check the system clock (timedatectl) and the receiver's time"
        }
    }
}

/// A `location` record of the contract from one fix: `id, timestamp, latitude, longitude,
/// altitude, speed, course, horizontal_accuracy, vertical_accuracy, fix_mode,
/// satellites_used`, each present only when the source knew it, and `location_source`;
/// `location_method` (and `raw_data`) when the source said how it made the fix.
enum LocationRecord {
    /// `clockTrusted` false: the system clock cannot be believed (ClockTrust), so the fix
    /// time is not compared with it.
    static func make(from fix: LocationFix, now: Date, clockTrusted: Bool = true, id: UUID = RecordID.make()) throws -> NewRecord {
        let time = fix.time.date
        // A time that is the system clock's own (GeoClue's) gets the plain rule.
        let acceptable = fix.source.timeIsIndependent
            ? isAcceptable(time, now: now, clockTrusted: clockTrusted)
            : CaptureTimeRule.isAcceptable(time, now: now)
        guard acceptable else {
            throw LocationRecordError.timeOutOfRange(fixTime: RFC3339.string(from: time),
                                                     now: RFC3339.string(from: now), source: fix.source)
        }
        var fields: [String: any Sendable] = [
            "timestamp": RFC3339.string(from: time),
            "latitude": fix.latitude,
            "longitude": fix.longitude,
            "location_source": fix.source.rawValue,
        ]
        // gpsd's 2D/3D; GeoClue does not say.
        if let mode = fix.mode { fields["fix_mode"] = mode }
        // Unknown values are left out, never written as 0 or null.
        let optional: [(String, (any Sendable)?)] = [
            ("altitude", fix.altitude),
            ("speed", fix.speed),
            ("course", fix.course),
            ("horizontal_accuracy", fix.horizontalAccuracy),
            ("vertical_accuracy", fix.verticalAccuracy),
            ("satellites_used", fix.satellitesUsed),
        ]
        for case let (key, value?) in optional {
            fields[key] = value
        }
        // How the fix was made, where each server keeps it: the archives keep the top-level
        // key, and the transforms (Ariata's, Virtues', the box's) drop unknown top-level keys
        // but keep the `raw_data` object as `metadata.ios_raw` (docs/upload.md).
        if let method = fix.method {
            fields["location_method"] = method.kind.rawValue
            fields["raw_data"] = ["location_method": method.kind.rawValue,
                                  "location_method_basis": method.basis.rawValue] as [String: any Sendable]
        }
        return try NewRecord(id: id, stream: .location, capturedAt: time, fields: fields)
    }

    /// The contract's time rule for a fix whose time is independent of the system clock
    /// (`FixSource.timeIsIndependent`). A GPS fix carries its own time from the satellites, so
    /// while the system clock is still unset (an SBC without RTC before NTP, often waiting
    /// on this very gpsd) the fix time is trusted on its own rather than compared with 1970;
    /// so it is while the clock cannot be believed (a clock restored days behind would
    /// otherwise refuse every true fix as "ahead").
    static func isAcceptable(_ time: Date, now: Date, clockTrusted: Bool = true) -> Bool {
        if CaptureTimeRule.clockLooksUnset(now) || !clockTrusted {
            return time >= CaptureTimeRule.earliest
        }
        return CaptureTimeRule.isAcceptable(time, now: now)
    }
}
