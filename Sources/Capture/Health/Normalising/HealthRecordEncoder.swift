import AgentCore
import Foundation

/// Writes a health record's JSON by hand: the same bytes `NewRecord(fields:)` makes
/// (keys sorted, slashes unescaped, whole numbers without a fraction), five times faster
/// than JSONSerialization, which was half the cost of ingesting a line.
enum HealthRecordEncoder {
    static func payload(id: UUID, sample: HealthSample, source: String) -> Data {
        var out = "{\"id\":\""
        out.reserveCapacity(220)
        out += id.uuidString.lowercased()
        out += "\",\"metadata\":{"
        if let duration = sample.sleepDuration {
            out += "\"sleep_duration\":\(Int(duration)),"
        }
        if let stage = sample.sleepStage {
            out += "\"sleep_stage\":"
            appendString(stage, to: &out)
            out += ","
        }
        out += "\"source\":"
        appendString(source, to: &out)
        out += "},\"metric_type\":\"\(sample.metric.rawValue)\",\"timestamp\":\""
        out += RFC3339.string(from: sample.timestamp)
        out += "\",\"unit\":\"\(sample.unit)\",\"value\":"
        out += number(sample.value)
        out += "}"
        return Data(out.utf8)
    }

    /// Whole values without a fraction (as JSONSerialization writes them), others in
    /// Swift's shortest round-trip form; values are bounded well below 1e15 by the normaliser.
    static func number(_ value: Double) -> String {
        if value == value.rounded(), value.magnitude < 1e15 { return String(Int64(value)) }
        return value.description
    }

    static func appendString(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
