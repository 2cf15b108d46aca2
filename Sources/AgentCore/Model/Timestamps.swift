import Foundation

/// RFC 3339 timestamps in UTC with milliseconds, the form the contract asks for
/// (`2026-11-22T10:05:00.000Z`).
public enum RFC3339 {
    public static func string(from date: Date) -> String {
        // Whole milliseconds, truncated toward the past so a formatted time never lies ahead;
        // bounded (about 285,000 years either way) so no date can overflow the count.
        let ms = (date.timeIntervalSince1970 * 1000).rounded(.down)
        return string(milliseconds: Int64(ms.isNaN ? 0 : min(max(ms, -9e15), 9e15)))
    }

    /// The same form from whole milliseconds since 1970, with no floating point on the way
    /// (a time shifted by a correction must come out exactly shifted).
    public static func string(milliseconds: Int64) -> String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let millis = Int(milliseconds - seconds * 1000)
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        // Written digit by digit as "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ": every record's time
        // goes through here, and String(format:) runs Foundation's and CoreFoundation's
        // formatting code, pages the daemon would otherwise not keep resident
        // (docs/decisions/0005-start-up-page-drop.md).
        var text = ""
        text.reserveCapacity(24)
        appendPadded(Int(parts.tm_year) + 1900, width: 4, to: &text)
        text += "-"
        appendPadded(Int(parts.tm_mon) + 1, width: 2, to: &text)
        text += "-"
        appendPadded(Int(parts.tm_mday), width: 2, to: &text)
        text += "T"
        appendPadded(Int(parts.tm_hour), width: 2, to: &text)
        text += ":"
        appendPadded(Int(parts.tm_min), width: 2, to: &text)
        text += ":"
        appendPadded(Int(parts.tm_sec), width: 2, to: &text)
        text += "."
        appendPadded(millis, width: 3, to: &text)
        text += "Z"
        return text
    }

    /// `value` as printf's `%0<width>d` writes it: zero-padded to `width` characters, a minus
    /// sign counted in them.
    static func appendPadded(_ value: Int, width: Int, to text: inout String) {
        let digits = String(value.magnitude)
        if value < 0 { text += "-" }
        let padding = width - digits.utf8.count - (value < 0 ? 1 : 0)
        if padding > 0 { text += String(repeating: "0", count: padding) }
        text += digits
    }

    /// Whole milliseconds since 1970 of a time in exactly the form `string(from:)` writes
    /// (`2026-11-22T10:05:00.000Z`); nil for anything else.
    public static func milliseconds(from text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 24, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
              bytes[19] == UInt8(ascii: "."), bytes[23] == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              let millis = number(20..<23), (1...12).contains(month), (1...31).contains(day),
              hour < 24, minute < 60, second < 61 else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        return Int64(timegm(&parts)) * 1000 + Int64(millis)
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
