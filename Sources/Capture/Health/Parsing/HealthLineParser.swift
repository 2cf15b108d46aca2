import AgentCore

/// Reads one line of a source. A parser may keep state between lines (a CSV header),
/// which a file source stores in its anchor so a restart mid-file reads on correctly.
public protocol HealthLineParser {
    mutating func parse(_ line: Substring) -> LineOutcome
    /// State to persist with the anchor; nil when the format has none.
    var state: String? { get }
    mutating func restore(state: String?)
}

public extension HealthLineParser {
    var state: String? { nil }
    mutating func restore(state: String?) {}
}

public enum HealthLineParsers {
    public static func make(_ format: HealthLineFormat) -> any HealthLineParser {
        switch format {
        case .jsonl: return JSONLinesParser()
        case .csv: return CSVLineParser()
        case .keyvalue: return KeyValueLineParser()
        }
    }

    /// Blank lines and `#` comments carry nothing in every format.
    static func isBlankOrComment(_ line: Substring) -> Bool {
        for c in line.utf8 {
            if c == 32 || c == 9 || c == 13 { continue }
            return c == 35 // '#'
        }
        return true
    }
}
