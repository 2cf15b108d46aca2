import AgentCore
import Foundation

/// Writes a health record's JSON straight from the sample: the same bytes
/// `NewRecord(fields:)` makes (`RecordJSON`'s keys in its order, its strings and numbers),
/// without building a dictionary of boxed values for each line.
///
/// Both server generations must be able to read it (docs/upload.md, "What the servers
/// read"): Virtues reads `metric_type` and `value`, Ariata only the top-level field of the
/// kind (`heart_rate`, `hrv`, `steps`, `sleep_duration` with `sleep_stage`, `workout_type`),
/// so a record carries both shapes. A workout's `workout_duration`, `active_energy`,
/// `distance` and `heart_rate` are what Virtues' workout transform reads.
enum HealthRecordEncoder {
    static func payload(id: UUID, sample: HealthSample, source: String) -> Data {
        let minutes = sample.sleepMinutes
        var out = "{"
        out.reserveCapacity(260)
        let workout = sample.workout
        if let energy = workout?.activeEnergy { out += "\"active_energy\":" + RecordJSON.number(energy) + "," }
        if let distance = workout?.distance { out += "\"distance\":" + RecordJSON.number(distance) + "," }
        switch sample.metric {
        case .heartRate, .restingHeartRate: out += "\"heart_rate\":" + RecordJSON.number(sample.value) + ","
        case .heartRateVariability: out += "\"hrv\":" + RecordJSON.number(sample.value) + ","
        case .workout: if let heartRate = workout?.heartRate { out += "\"heart_rate\":" + RecordJSON.number(heartRate) + "," }
        default: break
        }
        out += "\"id\":\""
        out += id.uuidString.lowercased()
        out += "\",\"metadata\":{"
        if let minutes {
            out += "\"duration_minutes\":\(minutes),"
        }
        out += "\"source\":"
        RecordJSON.appendString(source, to: &out)
        out += "},\"metric_type\":\"\(sample.metric.rawValue)\","
        if let minutes {
            out += "\"sleep_duration\":\(minutes),"
        }
        if let stage = sample.sleepStage {
            out += "\"sleep_stage\":"
            RecordJSON.appendString(stage, to: &out)
            out += ","
        }
        if sample.metric == .steps {
            out += "\"steps\":" + RecordJSON.number(sample.value) + ","
        }
        out += "\"timestamp\":\""
        out += RFC3339.string(from: sample.timestamp)
        out += "\",\"unit\":\"\(sample.unit)\",\"value\":"
        if let stage = sample.sleepStage {
            RecordJSON.appendString(stage, to: &out)
        } else if let workout {
            RecordJSON.appendString(workout.type, to: &out)
        } else {
            out += RecordJSON.number(sample.value)
        }
        if let workout {
            if let minutes = workout.minutes { out += ",\"workout_duration\":\(minutes)" }
            out += ",\"workout_type\":"
            RecordJSON.appendString(workout.type, to: &out)
        }
        out += "}"
        return Data(out.utf8)
    }
}
