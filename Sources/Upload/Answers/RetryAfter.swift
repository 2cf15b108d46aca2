import Foundation

/// The `Retry-After` header (RFC 9110 section 10.2.3): a number of seconds, or an
/// HTTP-date in any of the three forms a recipient must accept.
public enum RetryAfter {
    /// The longest wait a server may impose; a larger value (or a date years ahead) is
    /// taken as this, so a bogus header cannot park the uploads for good.
    public static let maximum: TimeInterval = 86_400

    /// Seconds to wait from `now`, or nil when the value is neither form. A date in the
    /// past means "now" (0).
    public static func seconds(from value: String, now: Date) -> TimeInterval? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // All digits: too many of them just means "a very long time".
            return min(TimeInterval(text) ?? maximum, maximum)
        }
        guard let date = httpDate(text) else { return nil }
        return min(max(date.timeIntervalSince(now), 0), maximum)
    }

    /// IMF-fixdate, the obsolete RFC 850 form and asctime, all in GMT.
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: 0)
        for format in ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            // asctime pads a one-digit day with a space ("Nov  6").
            let candidate = format.hasPrefix("EEE MMM") ? text.replacingOccurrences(of: "  ", with: " ") : text
            if let date = formatter.date(from: candidate) { return date }
        }
        return nil
    }
}
