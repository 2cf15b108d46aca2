import AgentCore
import Foundation

/// The end of a timed pause as the user writes it: `--for 90s|15m|2h|1h30m|1d` or
/// `--until 18:00` (local time, the next such time), `--until 18:00:30`, or a full
/// RFC 3339 time.
enum PauseEnd {
    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    /// Seconds in a duration such as `90s`, `15m`, `2h`, `1h30m`, `1d`; a bare number is
    /// seconds. At least a second, at most a year (366 days).
    static func duration(_ text: String) throws -> TimeInterval {
        guard let total = DurationArgument.seconds(text) else { throw invalidDuration(text) }
        guard total >= 1 else { throw Invalid(description: "--for \(text): a pause must last at least a second") }
        guard total <= 366 * 86_400 else {
            throw Invalid(description: "--for \(text): at most a year; for longer, pause without --for and resume by hand")
        }
        return total
    }

    /// The next time `text` names after `now`: `HH:MM` or `HH:MM:SS` in `timeZone` (today
    /// when still ahead, else tomorrow), or an RFC 3339 time (which must be ahead).
    static func time(_ text: String, after now: Date, timeZone: TimeZone = .current) throws -> Date {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let date = RFC3339.date(from: trimmed) ?? ISO8601DateFormatter().date(from: trimmed) {
            guard date > now else {
                throw Invalid(description: "--until \(text) has already passed; give a time ahead, such as 18:00")
            }
            return date
        }
        let parts = trimmed.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
        guard (2...3).contains(parts.count), parts.allSatisfy({ $0 != nil }),
              let hour = parts[0], let minute = parts[1], (0...23).contains(hour), (0...59).contains(minute) else {
            throw Invalid(description: "--until \(text): use a local time such as 18:00 or 07:30:00, or an RFC 3339 time such as 2026-05-01T18:00:00Z")
        }
        let second = parts.count == 3 ? (parts[2] ?? 0) : 0
        guard (0...59).contains(second) else {
            throw Invalid(description: "--until \(text): seconds go from 00 to 59")
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let wanted = DateComponents(hour: hour, minute: minute, second: second)
        // nextDate skips a time that a DST change leaves out to the next day that has it,
        // and is strictly after `now`, so "18:00" at 18:00 means tomorrow.
        guard let next = calendar.nextDate(after: now, matching: wanted, matchingPolicy: .nextTime) else {
            throw Invalid(description: "--until \(text): no such time ahead in \(timeZone.identifier)")
        }
        return next
    }

    private static func invalidDuration(_ text: String) -> Invalid {
        Invalid(description: "--for \(text): use a duration such as 90s, 15m, 2h, 1h30m or 1d")
    }
}
