import Foundation

/// Reads a sample's time: RFC 3339 (`2026-11-22T10:05:00.123Z`, `+01:00`, a space for the
/// `T`), or Unix time as a number (seconds; milliseconds when above 10^11). A time
/// without a zone is refused: guessing the zone would shift every sample by hours.
/// Hand-written rather than ISO8601DateFormatter because it runs once per line.
enum TimestampParser {
    enum Result: Equatable {
        case success(Date)
        case failure(String)
    }

    static func parse(_ value: FieldValue) -> Result {
        switch value {
        case .number(let n): return epoch(n)
        case .text(let s):
            if let n = NumberText.parse(s) { return epoch(n) }
            guard let d = rfc3339(s) else {
                return .failure("\"\(s.prefix(40))\" is not an RFC 3339 time with a zone or a Unix time")
            }
            return .success(d)
        case .null, .other: return .failure("not a time")
        }
    }

    private static func epoch(_ n: Double) -> Result {
        guard n.isFinite, n >= 0 else { return .failure("\(n) is not a Unix time") }
        return .success(Date(timeIntervalSince1970: n > 1e11 ? n / 1000 : n))
    }

    static func rfc3339<S: StringProtocol>(_ text: S) -> Date? {
        let b = Array(text.utf8)
        var i = 0
        func digits(_ count: Int) -> Int? {
            guard i + count <= b.count else { return nil }
            var v = 0
            for j in i..<(i + count) {
                let c = b[j]
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int(c - 48)
            }
            i += count
            return v
        }
        func expect(_ chars: [UInt8]) -> Bool {
            guard i < b.count, chars.contains(b[i]) else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect([45]), let month = digits(2), expect([45]), let day = digits(2),
              expect([84, 116, 32]), // T t space
              let hour = digits(2), expect([58]), let minute = digits(2), expect([58]), let second = digits(2)
        else { return nil }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var fraction = 0.0
        if i < b.count, b[i] == 46 { // .
            i += 1
            var scale = 0.1
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                fraction += Double(b[i] - 48) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        guard i < b.count else { return nil } // no zone
        var offset = 0
        if b[i] == 90 || b[i] == 122 { // Z z
            i += 1
        } else if b[i] == 43 || b[i] == 45 { // + -
            let sign = b[i] == 45 ? -1 : 1
            i += 1
            guard let oh = digits(2) else { return nil }
            if i < b.count, b[i] == 58 { i += 1 }
            guard let om = digits(2), oh < 24, om < 60 else { return nil }
            offset = sign * (oh * 3600 + om * 60)
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        guard day <= daysIn(month: month, year: year) else { return nil }
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
