import AgentCore
import Foundation

/// Writes a health record's JSON straight from the sample: the same bytes
/// `NewRecord(fields:)` makes (`RecordJSON`'s keys in its order, its strings and numbers),
/// without building a dictionary of boxed values for each line.
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
            RecordJSON.appendString(stage, to: &out)
            out += ","
        }
        out += "\"source\":"
        RecordJSON.appendString(source, to: &out)
        out += "},\"metric_type\":\"\(sample.metric.rawValue)\",\"timestamp\":\""
        out += RFC3339.string(from: sample.timestamp)
        out += "\",\"unit\":\"\(sample.unit)\",\"value\":"
        out += RecordJSON.number(sample.value)
        out += "}"
        return Data(out.utf8)
    }
}
