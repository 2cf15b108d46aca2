import AgentCore
import Foundation

/// `coverage`'s terminal picture of a `CoverageDay`: an hour axis, one line of cells per
/// stream, a legend of the states drawn, and per stream the share captured and the largest
/// gap with its reason (docs/operations.md, "Coverage").
public struct CoverageText: Sendable {
    public init() {}

    public func render(_ day: CoverageDay) -> String {
        let width = (day.rows.map(\.stream.rawValue.count).max() ?? 0) + 2
        var out: [String] = []
        let minutes = Int((day.cellSeconds / 60).rounded())
        out.append("Coverage on \(day.day) (\(day.timeZone.identifier)), one cell = \(minutes) min")
        out.append(String(repeating: " ", count: width) + axis(day))
        for row in day.rows {
            let cells = String(row.cells.map { $0?.symbol ?? " " })
            out.append(row.stream.rawValue.padding(toLength: width, withPad: " ", startingAt: 0) + cells)
        }
        let drawn = Set(day.rows.flatMap { $0.cells.compactMap { $0 } })
        let legend = CoverageState.allCases.filter(drawn.contains).map { "\($0.symbol) \($0.label)" }
        out.append("legend: " + (legend.isEmpty ? "nothing recorded for this day" : legend.joined(separator: ", ")) + "; blank: no record")
        for row in day.rows { out.append("\(row.stream.rawValue): " + Self.summary(row, timeZone: day.timeZone)) }
        return out.joined(separator: "\n") + "\n"
    }

    /// "captured 62 % (14h3m of 22h40m); largest gap 22:00-07:00 quiet hours (9h0m)".
    public static func summary(_ row: CoverageDay.Row, timeZone: TimeZone) -> String {
        guard let share = row.capturedShare else { return "nothing recorded" }
        var text = "captured \(Int((share * 100).rounded())) % (\(hours(row.capturedSeconds)) of \(hours(row.knownSeconds)))"
        if let gap = row.largestGap {
            text += "; largest gap \(LocalClockTime.string(gap.from, in: timeZone))-\(LocalClockTime.string(gap.to, in: timeZone)) "
                + "\(gap.state.label) (\(hours(gap.seconds)))"
        } else {
            text += "; no gap"
        }
        return text
    }

    /// 5m, 3h12m.
    static func hours(_ seconds: Double) -> String {
        let s = Int(max(0, seconds).rounded())
        return s < 3_600 ? "\(s / 60)m" : "\(s / 3_600)h\(s % 3_600 / 60)m"
    }

    /// The hour of every third hour above its cell.
    private func axis(_ day: CoverageDay) -> String {
        var line = [Character](repeating: " ", count: day.cellCount)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = day.timeZone
        for hour in stride(from: 0, to: 24, by: 3) {
            guard let moment = calendar.date(bySettingHour: hour, minute: 0, second: 0, of: day.from) else { continue }
            let index = Int((moment.timeIntervalSince(day.from) / day.cellSeconds).rounded(.down))
            for (offset, character) in String(hour).enumerated() where index + offset < line.count && index >= 0 {
                line[index + offset] = character
            }
        }
        return String(line)
    }
}

/// `coverage --json` (docs/operations.md, "Coverage"): the day, and per stream its spans,
/// cells, share captured and largest gap. Times are RFC 3339, shares 0 to 1.
public struct CoverageJSON: Encodable {
    struct Span: Encodable {
        var state: String
        var from: String
        var to: String
        var seconds: Double
    }

    struct Stream: Encodable {
        var stream: String
        var capturedShare: Double?
        var capturedSeconds: Double
        var knownSeconds: Double
        var largestGap: Span?
        var cells: String
        var spans: [Span]
    }

    var day: String
    var timeZone: String
    var from: String
    var to: String
    var cellSeconds: Double
    var legend: [String: String]
    var streams: [Stream]

    public init(_ day: CoverageDay) {
        func span(_ s: CoverageDay.Span) -> Span {
            Span(state: s.state.rawValue, from: RFC3339.string(from: s.from), to: RFC3339.string(from: s.to), seconds: s.seconds)
        }
        self.day = day.day
        timeZone = day.timeZone.identifier
        from = RFC3339.string(from: day.from)
        to = RFC3339.string(from: day.to)
        cellSeconds = day.cellSeconds
        legend = Dictionary(uniqueKeysWithValues: CoverageState.allCases.map { (String($0.symbol), $0.rawValue) })
        streams = day.rows.map { row in
            Stream(stream: row.stream.rawValue, capturedShare: row.capturedShare, capturedSeconds: row.capturedSeconds,
                   knownSeconds: row.knownSeconds, largestGap: row.largestGap.map(span),
                   cells: String(row.cells.map { $0?.symbol ?? " " }), spans: row.spans.map(span))
        }
    }

    public func data() throws -> Data {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        return try encoder.encode(self)
    }
}
