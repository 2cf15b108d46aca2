import Foundation

/// RFC 3339 timestamps in UTC with milliseconds, the form the contract asks for
/// (`2026-11-22T10:05:00.000Z`).
public enum RFC3339 {
    public static func string(from date: Date) -> String {
        // Whole milliseconds, truncated toward the past so a formatted time never lies ahead.
        let ms = (date.timeIntervalSince1970 * 1000).rounded(.down)
        let seconds = Int64((ms / 1000).rounded(.down))
        let millis = Int(ms - Double(seconds) * 1000)
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                      Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), millis)
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)`; nil for anything else.
    public static func date(from string: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = formatter.date(from: string) { return d }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: string)
    }
}

/// The server's rule for a record's time: not before 2000-01-01, not more than five
/// minutes ahead of now. A record outside it makes the server reject the whole batch,
/// so capture checks it before writing.
public enum CaptureTimeRule {
    public static let earliest = Date(timeIntervalSince1970: 946_684_800) // 2000-01-01T00:00:00Z
    public static let maxAhead: TimeInterval = 300

    public static func isAcceptable(_ time: Date, now: Date) -> Bool {
        time >= earliest && time <= now.addingTimeInterval(maxAhead)
    }

    /// True when the system clock itself cannot be right yet (an SBC without an RTC boots
    /// in 1970 until NTP answers): capture holds its records until it is.
    public static func clockLooksUnset(_ now: Date) -> Bool {
        now < earliest
    }
}
