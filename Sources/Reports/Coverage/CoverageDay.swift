import AgentCore
import Foundation

/// One local day of the coverage ledger (docs/operations.md, "Coverage"): for each stream,
/// its spans clipped to the day and to now, the day cut into `cellCount` equal cells (the
/// state that held most of each cell), the share captured and the largest gap with its
/// reason. What `coverage` draws, prints as JSON and renders as SVG, and `status` sums up.
public struct CoverageDay: Sendable, Equatable {
    /// A span of one state; `seconds` its length.
    public struct Span: Sendable, Equatable {
        public var state: CoverageState
        public var from: Date
        public var to: Date
        public var seconds: Double { to.timeIntervalSince(from) }
    }

    public struct Row: Sendable, Equatable {
        public var stream: StreamName
        public var spans: [Span]
        /// One state per cell, nil where the ledger says nothing (the future, before the
        /// agent ran, a stream off in the file).
        public var cells: [CoverageState?]
        /// Seconds captured, and seconds of the day so far the ledger knows of.
        public var capturedSeconds: Double
        public var knownSeconds: Double
        /// Captured over the day so far (0...1); nil when the ledger knows nothing of it.
        public var capturedShare: Double?
        /// The longest run of one state other than captured.
        public var largestGap: Span?
    }

    /// Local midnight to the next (23 or 25 hours on the days the clocks change).
    public var from: Date
    public var to: Date
    /// The day as YYYY-MM-DD, in `timeZone`.
    public var day: String
    public var timeZone: TimeZone
    public var now: Date
    public var cellCount: Int
    public var rows: [Row]

    public var cellSeconds: Double { to.timeIntervalSince(from) / Double(cellCount) }

    /// The day that holds `moment` in `timeZone`, read from `database`'s ledger.
    public static func read(_ database: AgentDatabase, day moment: Date, streams: [StreamName], timeZone: TimeZone = .current,
                            now: Date = Date(), cellCount: Int = 96) throws -> CoverageDay {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let from = calendar.startOfDay(for: moment)
        let to = calendar.date(byAdding: .day, value: 1, to: from) ?? from.addingTimeInterval(86_400)
        let spans = try database.coverage.spans(streams, from: from, to: to)
        return CoverageDay(from: from, to: to, timeZone: timeZone, now: now, cellCount: cellCount, streams: streams, spans: spans)
    }

    public init(from: Date, to: Date, timeZone: TimeZone, now: Date, cellCount: Int, streams: [StreamName], spans: [CoverageSpan]) {
        self.from = from
        self.to = to
        self.timeZone = timeZone
        self.now = now
        self.cellCount = max(1, cellCount)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = "yyyy-MM-dd"
        day = formatter.string(from: from)
        let end = min(to, max(from, now))
        rows = streams.map { stream in
            let clipped = spans.filter { $0.stream == stream }.compactMap { span -> Span? in
                let a = max(span.start, from), b = min(span.end ?? end, end)
                return b > a ? Span(state: span.state, from: a, to: b) : nil
            }
            return Self.row(stream, clipped, from: from, to: to, cells: max(1, cellCount))
        }
    }

    private static func row(_ stream: StreamName, _ spans: [Span], from: Date, to: Date, cells: Int) -> Row {
        let cellLength = to.timeIntervalSince(from) / Double(cells)
        var cellStates: [CoverageState?] = []
        for index in 0..<cells {
            let a = from.addingTimeInterval(Double(index) * cellLength), b = a.addingTimeInterval(cellLength)
            var time: [CoverageState: Double] = [:]
            for span in spans where span.from < b && span.to > a {
                time[span.state, default: 0] += min(span.to, b).timeIntervalSince(max(span.from, a))
            }
            // Most of the cell; a tie goes to the gap, so a short gap is not hidden by rounding.
            cellStates.append(time.max { l, r in l.value != r.value ? l.value < r.value : l.key == .captured }?.key)
        }
        // Runs of one state: spans that follow each other in the same state are one gap.
        var runs: [Span] = []
        for span in spans {
            if var last = runs.last, last.state == span.state, abs(last.to.timeIntervalSince(span.from)) < 1 {
                last.to = max(last.to, span.to)
                runs[runs.count - 1] = last
            } else {
                runs.append(span)
            }
        }
        let captured = spans.filter { $0.state == .captured }.reduce(0) { $0 + $1.seconds }
        let known = spans.reduce(0) { $0 + $1.seconds }
        return Row(stream: stream, spans: runs, cells: cellStates, capturedSeconds: captured, knownSeconds: known,
                   capturedShare: known > 0 ? captured / known : nil,
                   largestGap: runs.filter { $0.state != .captured }.max { $0.seconds < $1.seconds })
    }
}
