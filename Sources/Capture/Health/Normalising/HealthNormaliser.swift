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
    /// A workout sample's type, duration and measures.
    public var workout: Workout?
    /// More figures for `metadata` (a Bluetooth sensor's window: `rmssd_ms`, `beats`, …),
    /// archived by the servers and read by neither.
    public var details: [String: Double] = [:]

    /// A workout as the servers read it; the measures are already in the contract's units
    /// and precision (kcal, m, bpm), each nil when the input did not have it.
    public struct Workout: Sendable, Equatable {
        public var type: String
        /// Seconds, whole.
        public var duration: Double?
        public var activeEnergy: Double?
        public var distance: Double?
        public var heartRate: Double?

        /// Whole minutes, at least 1: the unit both servers read `workout_duration` in.
        public var minutes: Int? { duration.map(HealthSample.wholeMinutes) }
    }

    public var unit: String { metric.canonicalUnit }

    /// A sleep sample's duration in whole minutes, at least 1, as both servers read it.
    public var sleepMinutes: Int? {
        sleepDuration.map(Self.wholeMinutes)
    }

    /// Seconds as the servers' whole minutes: rounded, at least 1 (a short stage or
    /// workout still shows).
    static func wholeMinutes(_ seconds: Double) -> Int {
        max(1, Int((seconds / 60).rounded()))
    }

    /// The value as it goes into JSON: a whole number where the contract says whole; a
    /// sleep sample's is its stage's name, a workout's its type.
    public var jsonValue: any Sendable {
        if let sleepStage { return sleepStage }
        if let workout { return workout.type }
        switch metric {
        case .heartRate, .restingHeartRate, .steps, .oxygenSaturation, .sleep, .workout: return Int(value)
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
        switch raw.metric {
        case .sleep: return sleep(raw, timestamp: timestamp)
        case .workout: return workout(raw, timestamp: timestamp)
        default:
            switch quantity(raw) {
            case .success(let value): return .accepted(HealthSample(metric: raw.metric, value: value, timestamp: timestamp))
            case .failure(let refusal): return .rejected(refusal.reason)
            }
        }
    }

    struct Refusal: Error {
        var reason: String
    }

    /// A numeric sample's value in the contract's unit and precision, or why it cannot be right.
    private func quantity(_ raw: RawHealthSample) -> Result<Double, Refusal> {
        func rejected(_ reason: String) -> Result<Double, Refusal> { .failure(Refusal(reason: reason)) }
        guard case .number(let given) = raw.value, given.isFinite else {
            return rejected("\(raw.metric.rawValue) value is not a number")
        }
        var unit = raw.unit
        // SpO2 as a fraction (HealthKit's 0.97) when no unit says otherwise: 1 % is not a
        // reading a living wearer gives, so a value up to 1 can only be a fraction.
        if raw.metric == .oxygenSaturation, unit == nil, given > 0, given <= 1 { unit = "fraction" }
        guard let factor = HealthUnits.factor(unit, for: raw.metric) else {
            return rejected("unit \"\(unit ?? "")\" is not known for \(raw.metric.rawValue)")
        }
        let v = given * factor
        let value: Double
        switch raw.metric {
        case .heartRate, .restingHeartRate:
            guard v > 0, v <= 300 else { return rejected("heart rate \(v) bpm is not possible (must be above 0 and at most 300)") }
            value = max(1, v.rounded())
        case .oxygenSaturation:
            guard v > 0, v <= 100 else { return rejected("SpO2 \(v) % is not possible (must be above 0 and at most 100)") }
            value = max(1, v.rounded())
        case .steps:
            guard v >= 0 else { return rejected("steps \(v) is negative") }
            value = v.rounded()
        case .distance:
            guard v >= 0 else { return rejected("distance \(v) m is negative") }
            value = Self.round(v, decimals: 2)
        case .activeEnergy:
            guard v >= 0 else { return rejected("active energy \(v) kcal is negative") }
            value = Self.round(v, decimals: 1)
        case .heartRateVariability:
            guard v > 0 else { return rejected("HRV \(v) ms is not possible (must be above 0)") }
            value = Self.round(v, decimals: 1)
        case .sleep, .workout:
            return rejected("\(raw.metric.rawValue) has no numeric value")
        }
        guard value.magnitude < 1e15 else { return rejected("\(raw.metric.rawValue) \(v) is too large") }
        return .success(value)
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
        if let d = raw.duration, !(d >= 0 && d <= Self.longestDuration) {
            return .rejected("sleep duration \(d) s is not possible (0 to 7 days)")
        }
        return .accepted(HealthSample(metric: .sleep, value: Double(stage.rawValue), timestamp: timestamp,
                                      sleepStage: stage.name, sleepDuration: raw.duration.map { Self.round($0, decimals: 0) }))
    }

    /// The longest sleep stage or workout believed: a week.
    static let longestDuration: Double = 7 * 86_400

    /// A workout: a type (a name, put in lower case with `_` for spaces, as HealthKit's
    /// `HKWorkoutActivityTypeRunning` becomes `running`), a duration above 0 and at most a
    /// week when given, and measures checked like samples of their own.
    private func workout(_ raw: RawHealthSample, timestamp: Date) -> Outcome {
        guard case .text(let name) = raw.value else { return .rejected("a workout's type must be a name such as running") }
        guard let type = Self.workoutType(name) else {
            return .rejected("workout type \"\(name.prefix(80))\" is not a name (letters, digits, _ and -, at most 64 characters, e.g. running)")
        }
        if let d = raw.duration, !(d > 0 && d <= Self.longestDuration) {
            return .rejected("workout duration \(d) s is not possible (above 0, at most 7 days)")
        }
        var workout = HealthSample.Workout(type: type, duration: raw.duration.map { Self.round($0, decimals: 0) })
        for measure in raw.workoutMeasures {
            let value: Double
            switch quantity(measure) {
            case .success(let v): value = v
            case .failure(let refusal): return .rejected("workout \(measure.metric.rawValue): \(refusal.reason)")
            }
            switch measure.metric {
            case .activeEnergy: workout.activeEnergy = value
            case .distance: workout.distance = value
            case .heartRate: workout.heartRate = value
            default: return .rejected("\(measure.metric.rawValue) is not a measure of a workout")
            }
        }
        return .accepted(HealthSample(metric: .workout, value: 0, timestamp: timestamp, workout: workout))
    }

    static func workoutType(_ name: String) -> String? {
        var type = HealthFieldNames.normalise(String(NumberText.trimSpaces(name)))
        let prefix = "hkworkoutactivitytype"
        if type.utf8.starts(with: prefix.utf8), type.utf8.count > prefix.utf8.count {
            type = String(decoding: type.utf8.dropFirst(prefix.utf8.count), as: UTF8.self)
        }
        guard !type.isEmpty, type.utf8.count <= 64,
              type.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" })
        else { return nil }
        return type
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
        case .heartRate where ServerFieldLimits.acceptsHeartRate(sample.value),
             .restingHeartRate where ServerFieldLimits.acceptsHeartRate(sample.value):
            fields["heart_rate"] = sample.jsonValue
        case .heartRateVariability where ServerFieldLimits.acceptsMeasure(sample.value): fields["hrv"] = sample.jsonValue
        case .steps where ServerFieldLimits.acceptsMeasure(sample.value): fields["steps"] = sample.jsonValue
        default: break
        }
        if let workout = sample.workout {
            fields["workout_type"] = workout.type
            if let minutes = workout.minutes { fields["workout_duration"] = minutes }
            if let energy = workout.activeEnergy { fields["active_energy"] = energy }
            if let distance = workout.distance {
                if ServerFieldLimits.acceptsMeasure(distance) { fields["distance"] = distance } else { metadata["distance"] = distance }
            }
            if let heartRate = workout.heartRate {
                if ServerFieldLimits.acceptsHeartRate(heartRate) { fields["heart_rate"] = Int(heartRate) } else { metadata["heart_rate"] = Int(heartRate) }
            }
        }
        if let stage = sample.sleepStage { fields["sleep_stage"] = stage }
        if let minutes = sample.sleepMinutes {
            fields["sleep_duration"] = minutes
            metadata["duration_minutes"] = minutes
        }
        for (key, value) in sample.details { metadata[key] = value }
        fields["metadata"] = metadata
        return fields
    }
}
