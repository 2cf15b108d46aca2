import Foundation

/// One `[[microphone.quiet]]` block: on each of `days`, from `from` (local time) to `to`,
/// the microphone does not capture. A block whose `to` is not after its `from` crosses
/// midnight and ends on the next day (`from` equal to `to`: 24 hours); `days` names the
/// days a block *starts* on, so "22:00 to 07:00 on mon-fri" is Monday to Friday evenings,
/// ending Tuesday to Saturday mornings. docs/streams/microphone.md, "Quiet hours and muted
/// places".
public struct QuietHours: Sendable, Equatable {
    public var days: Weekdays
    public var from: TimeOfDay
    public var to: TimeOfDay

    public init(days: Weekdays = .everyDay, from: TimeOfDay, to: TimeOfDay) {
        self.days = days
        self.from = from
        self.to = to
    }

    /// Whether the block ends on the day after it starts.
    public var crossesMidnight: Bool { to.minutes <= from.minutes }
}

/// A local time of day, whole minutes ("HH:MM", 24-hour).
public struct TimeOfDay: Sendable, Equatable, Comparable, CustomStringConvertible {
    /// Minutes after midnight, 0 to 1439.
    public let minutes: Int

    public init?(hour: Int, minute: Int) {
        guard (0...23).contains(hour), (0...59).contains(minute) else { return nil }
        minutes = hour * 60 + minute
    }

    private init(minutes: Int) { self.minutes = minutes }

    public static let midnight = TimeOfDay(minutes: 0)

    /// "07:00", "7:00", "22:30"; nil for anything else.
    public init?(_ text: String) {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...2).contains(parts[0].count), parts[1].count == 2,
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let hour = Int(parts[0]), let minute = Int(parts[1]) else { return nil }
        self.init(hour: hour, minute: minute)
    }

    public var description: String { String(format: "%02d:%02d", minutes / 60, minutes % 60) }

    public static func < (a: Self, b: Self) -> Bool { a.minutes < b.minutes }

    /// What a bad value's error says to write.
    public static let expected = "a local time as \"HH:MM\" in 24-hour form, such as \"07:00\" or \"22:30\" (midnight is \"00:00\")"
}

/// The days of the week a block starts on, as written: `"mon-fri"`, `"sat,sun"`,
/// `"mon,wed-fri"`, `"fri-mon"` (a range may wrap past Sunday), `"daily"`.
public struct Weekdays: Sendable, Equatable, CustomStringConvertible {
    /// ISO weekday numbers: 1 is Monday, 7 is Sunday.
    public let days: Set<Int>
    /// As the file wrote it (written back the same), "daily" when built in code.
    public let text: String

    public static let everyDay = Weekdays(days: Set(1...7), text: "daily")
    private static let names = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    private init(days: Set<Int>, text: String) {
        self.days = days
        self.text = text
    }

    /// nil when `text` is not a list of days.
    public init?(_ text: String) {
        let spelled = text.trimmingCharacters(in: .whitespaces).lowercased()
        if ["daily", "every day", "all"].contains(spelled) {
            self = .everyDay
            return
        }
        var days: Set<Int> = []
        for item in spelled.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            let ends = item.split(separator: "-", omittingEmptySubsequences: false).map { Self.day(String($0)) }
            guard (1...2).contains(ends.count), let first = ends[0], let last = ends[ends.count - 1] else { return nil }
            var day = first
            while true {
                days.insert(day)
                if day == last { break }
                day = day % 7 + 1
            }
        }
        guard !days.isEmpty else { return nil }
        self.days = days
        self.text = text.trimmingCharacters(in: .whitespaces)
    }

    /// "mon" or "monday" → 1, ...
    private static func day(_ text: String) -> Int? {
        let name = text.trimmingCharacters(in: .whitespaces)
        guard name.count >= 3, let index = names.firstIndex(where: { name.hasPrefix($0) }) else { return nil }
        let full = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"][index]
        guard name == names[index] || name == full else { return nil }
        return index + 1
    }

    public func contains(isoWeekday: Int) -> Bool { days.contains(isoWeekday) }
    public var isEveryDay: Bool { days.count == 7 }
    public var description: String { text }

    public static let expected = "days as \"mon-fri\", \"sat,sun\", \"mon,wed-fri\" or \"daily\" (mon tue wed thu fri sat sun)"
}

/// Every `[[microphone.quiet]]` block, read in a time zone: whether a moment is quiet and
/// when that next changes. Pure calculation over the zone's rules, so it is right across
/// daylight-saving changes: a block's time that a change skips (02:30 when clocks go from
/// 02:00 to 03:00) happens when the clocks jump past it, and one that a change repeats
/// (02:30 when clocks go from 03:00 back to 02:00) happens the first time
/// (docs/streams/microphone.md, "Quiet hours and muted places").
public struct QuietSchedule: Sendable, Equatable {
    public var blocks: [QuietHours]
    public var timeZone: TimeZone

    public init(_ blocks: [QuietHours], timeZone: TimeZone = .current) {
        self.blocks = blocks
        self.timeZone = timeZone
    }

    public var isEmpty: Bool { blocks.isEmpty }

    /// Where a moment stands: quiet or not, since when (the start of the quiet span, or
    /// the end of the last one; nil when that lies further back than the look), and until
    /// when (nil: no change within a week ahead).
    public struct Phase: Sendable, Equatable {
        public var quiet: Bool
        public var since: Date?
        public var changesAt: Date?

        public init(quiet: Bool, since: Date?, changesAt: Date?) {
            self.quiet = quiet
            self.since = since
            self.changesAt = changesAt
        }
    }

    public func phase(at moment: Date) -> Phase {
        let spans = quietSpans(around: moment)
        if let current = spans.first(where: { $0.start <= moment && moment < $0.end }) {
            return Phase(quiet: true, since: current.start, changesAt: current.end)
        }
        return Phase(quiet: false, since: spans.last(where: { $0.end <= moment })?.end,
                     changesAt: spans.first(where: { $0.start > moment })?.start)
    }

    /// The quiet spans that start from two days before `moment`'s local day to eight days
    /// after it, merged where they meet or overlap.
    func quietSpans(around moment: Date) -> [DateInterval] {
        guard !blocks.isEmpty else { return [] }
        let today = localDay(of: moment)
        var spans: [DateInterval] = []
        for day in (today - 2)...(today + 8) {
            let weekday = Self.isoWeekday(ofDay: day)
            for block in blocks where block.days.contains(isoWeekday: weekday) {
                let start = instant(day: day, minutes: block.from.minutes)
                let end = instant(day: block.crossesMidnight ? day + 1 : day, minutes: block.to.minutes)
                // A block wholly inside an hour the clocks skip does not happen that day.
                if end > start { spans.append(DateInterval(start: start, end: end)) }
            }
        }
        spans.sort { $0.start < $1.start }
        var merged: [DateInterval] = []
        for span in spans {
            if let last = merged.last, span.start <= last.end {
                merged[merged.count - 1] = DateInterval(start: last.start, end: max(last.end, span.end))
            } else {
                merged.append(span)
            }
        }
        return merged
    }

    /// Days since 1970-01-01 of the local date `moment` falls on.
    func localDay(of moment: Date) -> Int {
        let local = moment.timeIntervalSince1970 + Double(timeZone.secondsFromGMT(for: moment))
        return Int((local / 86_400).rounded(.down))
    }

    /// 1970-01-01 was a Thursday (ISO 4).
    public static func isoWeekday(ofDay day: Int) -> Int {
        ((day + 3) % 7 + 7) % 7 + 1
    }

    /// The first moment the local clock shows `minutes` after midnight on local day `day`;
    /// for a time the clocks skip, the moment they jump past it.
    func instant(day: Int, minutes: Int) -> Date {
        let wall = Double(day) * 86_400 + Double(minutes) * 60
        // The offsets in force a day either side: a zone changes its offset at most once
        // in that stretch.
        let before = timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: wall - 86_400))
        let after = timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: wall + 86_400))
        let candidates = Set([before, after]).map { offset in (offset, Date(timeIntervalSince1970: wall - Double(offset))) }
            .filter { timeZone.secondsFromGMT(for: $0.1) == $0.0 }.map(\.1)
        if let first = candidates.min() { return first }
        // Skipped: the change lies between the two readings; find it to the second.
        var low = wall - Double(max(before, after))
        var high = wall - Double(min(before, after))
        while high - low > 1 {
            let middle = ((low + high) / 2).rounded(.down)
            if timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: middle)) == before { low = middle } else { high = middle }
        }
        return Date(timeIntervalSince1970: high)
    }
}
