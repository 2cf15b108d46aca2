import AgentCore
import Foundation

/// A point in time as a user types it on the command line (`purge --before`, `export
/// --since/--until`): an RFC 3339 time (`2026-05-01T18:00:00Z`), a local date
/// (`2026-05-01`, its midnight) or local date and time (`2026-05-01 18:00`,
/// `2026-05-01T18:00:30`), or an age (`7d`, `12h`, `30m`: that long before now).
enum TimeArgument {
    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    static func parse(_ text: String, option: String, now: Date = Date(), timeZone: TimeZone = .current) throws -> Date {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let date = RFC3339.date(from: trimmed) ?? ISO8601DateFormatter().date(from: trimmed) { return date }
        // An age, however long: an export or purge may reach back years.
        if trimmed.last?.isLetter == true, let age = DurationArgument.seconds(trimmed) {
            return now.addingTimeInterval(-age)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        for format in ["yyyy-MM-dd", "yyyy-MM-dd HH:mm", "yyyy-MM-dd'T'HH:mm", "yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd'T'HH:mm:ss"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) { return date }
        }
        throw Invalid(description: "\(option) \(text): use an RFC 3339 time (2026-05-01T18:00:00Z), a local date or "
                      + "date and time (2026-05-01, 2026-05-01 18:00), or an age (7d, 12h, 30m ago)")
    }
}
