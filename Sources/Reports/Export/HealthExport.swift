import AgentCore
import Foundation

/// The health stream as JSON Lines (each record as the server receives it) or CSV (one
/// column per field any record has: `id`, `timestamp`, `metric_type`, `value`, `unit` first).
public enum HealthFormat: String, CaseIterable, Sendable {
    case jsonl, csv
}

public struct HealthExport {
    public let format: HealthFormat

    public init(format: HealthFormat) { self.format = format }

    static let leadingColumns = ["id", "timestamp", "metric_type", "value", "unit"]

    @discardableResult
    public func write(from database: AgentDatabase, since: Date?, until: Date?, to out: ExportOutput) throws -> Int {
        var count = 0
        switch format {
        case .jsonl:
            try database.recordQueue.forEachRecord(stream: .health, since: since, until: until) { record in
                try out.write(record.payload)
                try out.write("\n")
                count += 1
            }
        case .csv:
            // Two passes: the columns must be known before
            // the first row, and health is small (a day is a few thousand samples).
            var keys = Set<String>()
            try database.recordQueue.forEachRecord(stream: .health, since: since, until: until) { record in
                if let fields = ExportPayload.object(record.payload) { keys.formUnion(fields.keys) }
            }
            let columns = Self.leadingColumns.filter(keys.contains) + keys.subtracting(Self.leadingColumns).sorted()
            try out.write(columns.map(Self.csvField).joined(separator: ",") + "\r\n")
            try database.recordQueue.forEachRecord(stream: .health, since: since, until: until) { record in
                let fields = ExportPayload.object(record.payload) ?? [:]
                try out.write(columns.map { Self.csvField(Self.text(fields[$0])) }.joined(separator: ",") + "\r\n")
                count += 1
            }
        }
        try out.finish()
        return count
    }

    /// A field's text: strings as they are, numbers as JSON writes them, objects and
    /// arrays as JSON (metadata), absent as empty.
    static func text(_ value: Any?) -> String {
        guard let value, !(value is NSNull) else { return "" }
        if let string = value as? String { return string }
        if let bool = value as? Bool { return bool ? "true" : "false" }
        if let data = try? JSONSerialization.data(withJSONObject: [value], options: [.sortedKeys, .withoutEscapingSlashes]),
           let array = String(data: data, encoding: .utf8) {
            return String(array.dropFirst().dropLast())
        }
        return "\(value)"
    }

    /// RFC 4180: quoted when it holds a comma, a quote or a line break; quotes doubled.
    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
