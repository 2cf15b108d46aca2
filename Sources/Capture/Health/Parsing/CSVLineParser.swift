import Foundation

/// CSV with a header row naming the columns (the same names as the JSON fields, long or
/// wide form). A row is a header when no cell is a number or a time and at least one
/// cell names a known column; a later header (a rotated file starting over) replaces
/// the earlier one. Cells may be quoted (`"a,b"`, `""` for a quote).
public struct CSVLineParser: HealthLineParser {
    private var header: [String]?

    public init() {}

    public var state: String? { header.map { $0.map(Self.quote).joined(separator: ",") } }

    public mutating func restore(state: String?) {
        header = state.flatMap { Self.cells(Substring($0)) }
    }

    public mutating func parse(_ line: Substring) -> LineOutcome {
        if HealthLineParsers.isBlankOrComment(line) { return .ignored }
        guard let cells = Self.cells(line) else { return .malformed("unbalanced quotes") }
        if Self.looksLikeHeader(cells) {
            header = cells.map { String(NumberText.trimSpaces($0)) }
            return .ignored
        }
        guard let header else { return .malformed("data row before any header row") }
        guard cells.count == header.count else {
            return .malformed("\(cells.count) cells where the header has \(header.count)")
        }
        var fields: [(String, FieldValue)] = []
        fields.reserveCapacity(cells.count)
        for (name, cell) in zip(header, cells) {
            let text = String(NumberText.trimSpaces(cell))
            fields.append((name, text.isEmpty ? .null : .text(text)))
        }
        return HealthFieldMapper.outcome(fields)
    }

    static func looksLikeHeader(_ cells: [String]) -> Bool {
        var named = false
        for cell in cells {
            let text = String(NumberText.trimSpaces(cell))
            if NumberText.parse(text) != nil || TimestampParser.rfc3339(text) != nil { return false }
            let key = HealthFieldNames.normalise(text)
            if HealthFieldNames.metricAliases[key] != nil || HealthFieldNames.timestamp.contains(key)
                || HealthFieldNames.metric.contains(key) || HealthFieldNames.value.contains(key) {
                named = true
            }
        }
        return named
    }

    /// Splits a row; nil when a quote is left open.
    static func cells(_ line: Substring) -> [String]? {
        var cells: [String] = []
        var current: [UInt8] = []
        var quoted = false
        var bytes = Array(line.utf8)
        if bytes.last == 13 { bytes.removeLast() } // CRLF files
        var i = 0
        while i < bytes.count {
            let c = bytes[i]
            if quoted {
                if c == 34 {
                    if i + 1 < bytes.count, bytes[i + 1] == 34 {
                        current.append(34)
                        i += 1
                    } else {
                        quoted = false
                    }
                } else {
                    current.append(c)
                }
            } else if c == 34 {
                quoted = true
            } else if c == 44 {
                cells.append(String(decoding: current, as: UTF8.self))
                current.removeAll(keepingCapacity: true)
            } else {
                current.append(c)
            }
            i += 1
        }
        if quoted { return nil }
        cells.append(String(decoding: current, as: UTF8.self))
        return cells
    }

    private static func quote(_ cell: String) -> String {
        cell.contains(",") || cell.contains("\"") ? "\"" + cell.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : cell
    }
}
