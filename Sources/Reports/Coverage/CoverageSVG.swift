import AgentCore
import Foundation

/// `coverage --svg`: a `CoverageDay` as an SVG picture (docs/operations.md, "Coverage"): a
/// 24-hour axis in local time, one row per stream, each span its state's colour, captured
/// time split into what the server has (uploaded) and what still waits (pending), and a
/// legend. Plain SVG 1.1 (rectangles and text), so any viewer or `rsvg-convert` draws it.
public struct CoverageSVG: Sendable {
    /// Per stream, the cells (as `CoverageDay`'s) whose captured time has a record still
    /// pending upload.
    public var pendingCells: [StreamName: Set<Int>]

    public init(pendingCells: [StreamName: Set<Int>] = [:]) {
        self.pendingCells = pendingCells
    }

    /// The split read from the queue: a cell is pending while any record captured in it is.
    public static func pendingCells(_ day: CoverageDay, queue: RecordQueue) throws -> [StreamName: Set<Int>] {
        var pending: [StreamName: Set<Int>] = [:]
        for row in day.rows {
            let counts = try queue.captureCounts(stream: row.stream, from: day.from, to: day.to, cellSeconds: day.cellSeconds)
            pending[row.stream] = Set(counts.filter { ($0.value[.pending] ?? 0) > 0 }.keys)
        }
        return pending
    }

    /// The fill of each state; captured is split in two.
    public static func colour(_ state: CoverageState) -> String {
        switch state {
        case .captured: return uploadedColour
        case .quiet: return "#3f51b5"
        case .mutedPlace: return "#9c27b0"
        case .paused: return "#ffb300"
        case .serverOff: return "#795548"
        case .lowBattery: return "#ff7043"
        case .asleep: return "#90a4ae"
        case .deviceMissing: return "#e53935"
        case .noFix: return "#ec407a"
        case .stopped: return "#cfd8dc"
        case .lost: return "#000000"
        }
    }

    public static let uploadedColour = "#2e7d32"
    public static let pendingColour = "#a5d6a7"

    /// Geometry, in SVG units (pixels at 1:1).
    public static let left = 110.0, plotWidth = 864.0, top = 56.0, rowHeight = 28.0, rowGap = 10.0

    public func render(_ day: CoverageDay) -> String {
        let width = Self.left + Self.plotWidth + 44
        let rowsBottom = Self.top + Double(day.rows.count) * (Self.rowHeight + Self.rowGap)
        let legendStates = CoverageState.allCases.filter { $0 != .captured }
        let height = rowsBottom + 30 + 22 * Double((legendStates.count + 2 + 3) / 4)
        var svg: [String] = []
        svg.append(##"<?xml version="1.0" encoding="UTF-8"?>"##)
        svg.append(##"<svg xmlns="http://www.w3.org/2000/svg" width="\##(n(width))" height="\##(n(height))" viewBox="0 0 \##(n(width)) \##(n(height))" font-family="sans-serif" font-size="12">"##)
        svg.append(##"<rect x="0" y="0" width="\##(n(width))" height="\##(n(height))" fill="#ffffff"/>"##)
        svg.append(##"<text x="10" y="20" font-size="15">Coverage on \##(day.day) (\##(escape(day.timeZone.identifier)))</text>"##)
        // The hours, local: a tick each hour, a label every three.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = day.timeZone
        for hour in 0...24 {
            let moment = hour == 24 ? day.to : calendar.date(bySettingHour: hour, minute: 0, second: 0, of: day.from) ?? day.from
            let x = self.x(moment, day)
            svg.append(##"<line x1="\##(n(x))" y1="\##(n(Self.top - 6))" x2="\##(n(x))" y2="\##(n(rowsBottom - Self.rowGap))" stroke="#e0e0e0" stroke-width="1"/>"##)
            if hour % 3 == 0 {
                svg.append(##"<text x="\##(n(x))" y="\##(n(Self.top - 10))" text-anchor="middle">\##(String(format: "%02d:00", hour % 24 == 0 && hour > 0 ? 24 : hour))</text>"##)
            }
        }
        for (index, row) in day.rows.enumerated() {
            let y = Self.top + Double(index) * (Self.rowHeight + Self.rowGap)
            svg.append(##"<text x="10" y="\##(n(y + Self.rowHeight / 2 + 4))">\##(row.stream.rawValue)</text>"##)
            svg.append(##"<rect x="\##(n(Self.left))" y="\##(n(y))" width="\##(n(Self.plotWidth))" height="\##(n(Self.rowHeight))" fill="#fafafa" stroke="#e0e0e0"/>"##)
            for span in row.spans {
                if span.state == .captured {
                    svg.append(contentsOf: captured(span, row: row.stream, day: day, y: y))
                } else {
                    svg.append(rect(from: span.from, to: span.to, day: day, y: y, fill: Self.colour(span.state), title: span.state.label))
                }
            }
            if let share = row.capturedShare {
                svg.append(##"<text x="\##(n(Self.left + Self.plotWidth + 4))" y="\##(n(y + Self.rowHeight / 2 + 4))" font-size="10">\##(Int((share * 100).rounded()))%</text>"##)
            }
        }
        // The legend: uploaded, pending, then each reason.
        let entries = [("captured, uploaded", Self.uploadedColour), ("captured, pending upload", Self.pendingColour)]
            + legendStates.map { ($0.label, Self.colour($0)) }
        for (index, entry) in entries.enumerated() {
            let x = 10 + Double(index % 4) * 240, y = rowsBottom + 16 + Double(index / 4) * 22
            svg.append(##"<rect x="\##(n(x))" y="\##(n(y))" width="14" height="14" fill="\##(entry.1)"/>"##)
            svg.append(##"<text x="\##(n(x + 20))" y="\##(n(y + 11))">\##(escape(entry.0))</text>"##)
        }
        svg.append("</svg>")
        return svg.joined(separator: "\n") + "\n"
    }

    /// A captured span, cell by cell where its records are pending, uploaded elsewhere.
    private func captured(_ span: CoverageDay.Span, row: StreamName, day: CoverageDay, y: Double) -> [String] {
        let pending = pendingCells[row] ?? []
        var parts: [String] = []
        var start = span.from
        var current: Bool?
        let first = Int((span.from.timeIntervalSince(day.from) / day.cellSeconds).rounded(.down))
        let last = Int((span.to.timeIntervalSince(day.from) / day.cellSeconds).rounded(.up))
        for cell in first..<max(first + 1, last) {
            let cellStart = max(span.from, day.from.addingTimeInterval(Double(cell) * day.cellSeconds))
            let isPending = pending.contains(cell)
            if let current, current != isPending {
                parts.append(rect(from: start, to: cellStart, day: day, y: y, fill: current ? Self.pendingColour : Self.uploadedColour,
                                  title: current ? "captured, pending upload" : "captured, uploaded"))
                start = cellStart
            }
            current = isPending
        }
        let isPending = current ?? false
        parts.append(rect(from: start, to: span.to, day: day, y: y, fill: isPending ? Self.pendingColour : Self.uploadedColour,
                          title: isPending ? "captured, pending upload" : "captured, uploaded"))
        return parts
    }

    private func rect(from: Date, to: Date, day: CoverageDay, y: Double, fill: String, title: String) -> String {
        let x0 = x(from, day), x1 = x(to, day)
        return ##"<rect x="\##(n(x0))" y="\##(n(y))" width="\##(n(max(0.5, x1 - x0)))" height="\##(n(Self.rowHeight))" fill="\##(fill)"><title>\##(escape(title))</title></rect>"##
    }

    private func x(_ moment: Date, _ day: CoverageDay) -> Double {
        let fraction = moment.timeIntervalSince(day.from) / day.to.timeIntervalSince(day.from)
        return Self.left + Self.plotWidth * min(1, max(0, fraction))
    }

    private func n(_ value: Double) -> String { String(format: "%.2f", value) }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
