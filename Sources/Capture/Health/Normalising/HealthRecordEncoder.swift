import AgentCore
import Foundation

/// Writes a health record's JSON straight from the sample: the same bytes
/// `NewRecord(fields:)` makes (`RecordJSON`'s keys in its order, its strings and numbers),
/// without building a dictionary of boxed values for each line.
///
/// Both server generations must be able to read it (docs/upload.md, "What the servers
/// read"): Virtues reads `metric_type` and `value`, Ariata only the top-level field of the
/// kind (`heart_rate`, `hrv`, `steps`, `sleep_duration` with `sleep_stage`, `workout_type`),
/// so a record carries both shapes. A top-level field goes out only inside the servers'
/// validation (`ServerFieldLimits`); a workout's measure outside it moves to `metadata`.
/// A workout's `workout_duration`, `active_energy`,
/// `distance` and `heart_rate` are what Virtues' workout transform reads.
enum HealthRecordEncoder {
    static func payload(id: UUID, sample: HealthSample, source: String) -> Data {
        let minutes = sample.sleepMinutes
        var out = "{"
        out.reserveCapacity(260)
        let workout = sample.workout
        let limits = WorkoutLimits(workout)
        if let energy = workout?.activeEnergy { out += "\"active_energy\":" + RecordJSON.number(energy) + "," }
        if let distance = limits.topLevelDistance { out += "\"distance\":" + RecordJSON.number(distance) + "," }
        switch sample.metric {
        case .heartRate where ServerFieldLimits.acceptsHeartRate(sample.value),
             .restingHeartRate where ServerFieldLimits.acceptsHeartRate(sample.value):
            out += "\"heart_rate\":" + RecordJSON.number(sample.value) + ","
        case .heartRateVariability where ServerFieldLimits.acceptsMeasure(sample.value):
            out += "\"hrv\":" + RecordJSON.number(sample.value) + ","
        case .workout: if let heartRate = limits.topLevelHeartRate { out += "\"heart_rate\":" + RecordJSON.number(heartRate) + "," }
        default: break
        }
        out += "\"id\":\""
        out += id.uuidString.lowercased()
        out += "\",\"metadata\":{"
        // Keys in sorted order, as `RecordJSON` writes them.
        var metadata: [(key: String, json: String)] = sample.details.map { ($0.key, RecordJSON.number($0.value)) }
        if let distance = limits.metadataDistance { metadata.append(("distance", RecordJSON.number(distance))) }
        if let minutes { metadata.append(("duration_minutes", "\(minutes)")) }
        if let heartRate = limits.metadataHeartRate { metadata.append(("heart_rate", RecordJSON.number(heartRate))) }
        var sourceJSON = ""
        RecordJSON.appendString(source, to: &sourceJSON)
        metadata.append(("source", sourceJSON))
        out += metadata.sorted { $0.key < $1.key }.map { entry -> String in
            var key = ""
            RecordJSON.appendString(entry.key, to: &key)
            return key + ":" + entry.json
        }.joined(separator: ",")
        out += "},\"metric_type\":\"\(sample.metric.rawValue)\","
        if let minutes {
            out += "\"sleep_duration\":\(minutes),"
        }
        if let stage = sample.sleepStage {
            out += "\"sleep_stage\":"
            RecordJSON.appendString(stage, to: &out)
            out += ","
        }
        if sample.metric == .steps, ServerFieldLimits.acceptsMeasure(sample.value) {
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

/// Where a workout's distance and heart rate go: top level inside the servers' limits,
/// `metadata` outside them (archived raw, never checked), so one odd reading does not fail
/// a batch and is not lost either.
struct WorkoutLimits {
    var topLevelDistance: Double?
    var metadataDistance: Double?
    var topLevelHeartRate: Double?
    var metadataHeartRate: Double?

    init(_ workout: HealthSample.Workout?) {
        if let distance = workout?.distance {
            if ServerFieldLimits.acceptsMeasure(distance) { topLevelDistance = distance } else { metadataDistance = distance }
        }
        if let heartRate = workout?.heartRate {
            if ServerFieldLimits.acceptsHeartRate(heartRate) { topLevelHeartRate = heartRate } else { metadataHeartRate = heartRate }
        }
    }
}
