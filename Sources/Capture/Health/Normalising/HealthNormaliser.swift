import AgentCore
import Foundation

/// A sample as the contract wants it: metric, value rounded to the metric's precision,
/// canonical unit, checked time.
public struct HealthSample: Sendable, Equatable {
    public var metric: HealthMetric
    /// Already converted and rounded; `jsonValue` is what the record's `value` holds.
    public var value: Double
    public var timestamp: Date
    public var sleepStage: String?
    public var sleepDuration: Double?

    public var unit: String { metric.canonicalUnit }

    /// A sleep sample's duration in whole minutes, at least 1, as both servers read it.
    public var sleepMinutes: Int? {
        sleepDuration.map { max(1, Int(($0 / 60).rounded())) }
    }

    /// The value as it goes into JSON: a whole number where the contract says whole; a
    /// sleep sample's is its stage's name.
    public var jsonValue: any Sendable {
        if let sleepStage { return sleepStage }
        switch metric {
        case .heartRate, .restingHeartRate, .steps, .oxygenSaturation, .sleep: return Int(value)
        case .distance, .activeEnergy, .heartRateVariability: return value
        }
    }
}

/// The contract's rules for health samples (see ingest.md, "health"): conversion to the
/// canonical unit, rounding, and refusing values that cannot be right.
public struct HealthNormaliser: Sendable {
    public enum Outcome: Equatable, Sendable {
        case accepted(HealthSample)
        case rejected(String)
    }

    public init() {}

    /// `now` dates a sample that carried no time and bounds how far ahead a time may be.
    /// With `clockTrusted` false the clock cannot be believed: a sample's own time is
    /// checked against `trueNow` (the true time from this boot's evidence) when it is
    /// known, and otherwise only held to "after 2000" (a wrong clock must not refuse right
    /// times); a sample dated from the clock is not checked at all (it is held and checked
    /// once corrected).
    public func normalise(_ raw: RawHealthSample, now: Date, clockTrusted: Bool = true, trueNow: Date? = nil) -> Outcome {
        let timestamp = raw.timestamp ?? now
        let reference = clockTrusted ? now : raw.timestamp == nil ? nil : trueNow
        if let reference {
            guard CaptureTimeRule.isAcceptable(timestamp, now: reference) else {
                return .rejected("timestamp \(RFC3339.string(from: timestamp)) is before 2000 or more than 5 minutes ahead of "
                    + (clockTrusted ? "the clock" : "the true time (\(RFC3339.string(from: reference)), known from this boot's evidence)"))
            }
        } else if let own = raw.timestamp, own < CaptureTimeRule.earliest {
            return .rejected("timestamp \(RFC3339.string(from: own)) is before 2000")
        }
        if raw.metric == .sleep { return sleep(raw, timestamp: timestamp) }

        guard case .number(let given) = raw.value, given.isFinite else {
            return .rejected("\(raw.metric.rawValue) value is not a number")
        }
        var unit = raw.unit
        // SpO2 as a fraction (HealthKit's 0.97) when no unit says otherwise: 1 % is not a
        // reading a living wearer gives, so a value up to 1 can only be a fraction.
        if raw.metric == .oxygenSaturation, unit == nil, given > 0, given <= 1 { unit = "fraction" }
        guard let factor = HealthUnits.factor(unit, for: raw.metric) else {
            return .rejected("unit \"\(unit ?? "")\" is not known for \(raw.metric.rawValue)")
        }
        let v = given * factor
        let value: Double
        switch raw.metric {
        case .heartRate, .restingHeartRate:
            guard v > 0, v <= 300 else { return .rejected("heart rate \(v) bpm is not possible (must be above 0 and at most 300)") }
            value = max(1, v.rounded())
        case .oxygenSaturation:
            guard v > 0, v <= 100 else { return .rejected("SpO2 \(v) % is not possible (must be above 0 and at most 100)") }
            value = max(1, v.rounded())
        case .steps:
            guard v >= 0 else { return .rejected("steps \(v) is negative") }
            value = v.rounded()
        case .distance:
            guard v >= 0 else { return .rejected("distance \(v) m is negative") }
            value = Self.round(v, decimals: 2)
        case .activeEnergy:
            guard v >= 0 else { return .rejected("active energy \(v) kcal is negative") }
            value = Self.round(v, decimals: 1)
        case .heartRateVariability:
            guard v > 0 else { return .rejected("HRV \(v) ms is not possible (must be above 0)") }
            value = Self.round(v, decimals: 1)
        case .sleep:
            return .rejected("unreachable")
        }
        guard value.magnitude < 1e15 else { return .rejected("\(raw.metric.rawValue) \(v) is too large") }
        return .accepted(HealthSample(metric: raw.metric, value: value, timestamp: timestamp))
    }

    private func sleep(_ raw: RawHealthSample, timestamp: Date) -> Outcome {
        let stage: SleepStage?
        switch raw.value {
        case .number(let n):
            stage = n == n.rounded() && n.magnitude < 100 ? SleepStage(rawValue: Int(n)) : nil
        case .text(let name):
            stage = SleepStage(name: name)
        }
        guard let stage else { return .rejected("sleep stage \(raw.value) is not one of 0-5 or \(SleepStage.allCases.map(\.name).joined(separator: ", "))") }
        if let d = raw.duration, !(d >= 0 && d <= 7 * 86_400) {
            return .rejected("sleep duration \(d) s is not possible (0 to 7 days)")
        }
        return .accepted(HealthSample(metric: .sleep, value: Double(stage.rawValue), timestamp: timestamp,
                                      sleepStage: stage.name, sleepDuration: raw.duration.map { Self.round($0, decimals: 0) }))
    }

    /// Half away from zero, at `decimals` places.
    static func round(_ v: Double, decimals: Int) -> Double {
        let scale = pow(10, Double(decimals))
        return (v * scale).rounded() / scale
    }

    /// The record the queue stores: the contract's fields with `metadata.source`.
    public func record(_ sample: HealthSample, source: String) throws -> NewRecord {
        let id = RecordID.make()
        return NewRecord(id: id, stream: .health, capturedAt: sample.timestamp,
                         payload: HealthRecordEncoder.payload(id: id, sample: sample, source: source))
    }

    /// The record's fields as `NewRecord(fields:)` takes them: the reference the
    /// hand-written encoder is tested against.
    func referenceFields(_ sample: HealthSample, source: String) -> [String: any Sendable] {
        var metadata: [String: any Sendable] = ["source": source]
        var fields: [String: any Sendable] = [
            "timestamp": RFC3339.string(from: sample.timestamp),
            "metric_type": sample.metric.rawValue,
            "value": sample.jsonValue,
            "unit": sample.unit,
        ]
        switch sample.metric {
        case .heartRate, .restingHeartRate: fields["heart_rate"] = sample.jsonValue
        case .heartRateVariability: fields["hrv"] = sample.jsonValue
        case .steps: fields["steps"] = sample.jsonValue
        default: break
        }
        if let stage = sample.sleepStage { fields["sleep_stage"] = stage }
        if let minutes = sample.sleepMinutes {
            fields["sleep_duration"] = minutes
            metadata["duration_minutes"] = minutes
        }
        fields["metadata"] = metadata
        return fields
    }
}
