import Foundation

/// A field's value as a line format carries it.
enum FieldValue: Equatable {
    case number(Double)
    case text(String)
    case null
    /// true/false, arrays, objects: never a sample value.
    case other
}

/// Turns the fields of one line (a JSON object, a CSV row under its header, `key=value`
/// pairs) into samples. Two shapes are read, as documented:
/// - long: `metric_type` + `value` (+ `unit`), one sample per line;
/// - wide: each key naming a metric (`hr`, `steps`, `distance_km`) is one sample.
enum HealthFieldMapper {
    static func outcome(_ raw: [(String, FieldValue)]) -> LineOutcome {
        var fields: [String: FieldValue] = [:]
        var order: [String] = []
        for (key, value) in raw {
            let k = HealthFieldNames.normalise(key)
            if fields[k] == nil { order.append(k) }
            fields[k] = value
        }
        func first(_ names: Set<String>) -> (String, FieldValue)? {
            for k in order where names.contains(k) {
                if let v = fields[k], v != .null { return (k, v) }
            }
            return nil
        }

        var timestamp: Date?
        if let (key, value) = first(HealthFieldNames.timestamp) {
            switch TimestampParser.parse(value) {
            case .success(let date): timestamp = date
            case .failure(let message): return .malformed("\(key): \(message)")
            }
        }
        var duration: Double?
        if let (key, value) = first(HealthFieldNames.duration) {
            guard let d = number(value) else { return .malformed("\(key) is not a number") }
            duration = d
        }
        var unit: String?
        if let (key, value) = first(HealthFieldNames.unit) {
            guard case .text(let u) = value else { return .malformed("\(key) is not text") }
            unit = u
        }

        let metricField = first(HealthFieldNames.metric)
        if metricField.map({ isWorkout($0.1) }) ?? (first(HealthFieldNames.workoutType) != nil
            || order.contains { HealthFieldNames.metricAliases[$0]?.0 == .workout }) {
            return workout(fields, order: order, first: first, timestamp: timestamp, duration: duration, unit: unit)
        }

        if let (key, metricValue) = metricField {
            guard case .text(let name) = metricValue else { return .malformed("\(key) is not text") }
            guard let (metric, impliedUnit) = HealthFieldNames.metric(named: name) else {
                return .malformed("unknown \(key) \"\(name)\"")
            }
            let valueField = first(HealthFieldNames.value) ?? (metric == .sleep ? first(HealthFieldNames.stage) : nil)
            guard let (valueKey, rawValue) = valueField else { return .malformed("no value") }
            guard let value = sampleValue(rawValue, metric: metric) else {
                return .malformed("\(valueKey) is not a number")
            }
            return .samples([RawHealthSample(metric: metric, value: value, unit: unit ?? impliedUnit,
                                             timestamp: timestamp, duration: duration)])
        }

        var samples: [RawHealthSample] = []
        for k in order {
            guard let (metric, impliedUnit) = HealthFieldNames.metricAliases[k], let raw = fields[k] else { continue }
            if raw == .null || raw == .text("") { continue }
            guard let value = sampleValue(raw, metric: metric) else { return .malformed("\(k) is not a number") }
            samples.append(RawHealthSample(metric: metric, value: value, unit: impliedUnit,
                                           timestamp: timestamp, duration: metric == .sleep ? duration : nil))
        }
        if samples.isEmpty { return .malformed("no known metric field") }
        // A `unit` field is only unambiguous when the line holds one sample.
        if samples.count == 1, let unit, samples[0].unit == nil { samples[0].unit = unit }
        return .samples(samples)
    }

    private static func isWorkout(_ metricValue: FieldValue) -> Bool {
        guard case .text(let name) = metricValue else { return false }
        return HealthFieldNames.metric(named: name)?.0 == .workout
    }

    /// The measures a workout line's energy, distance and heart rate give the workout
    /// (never samples of their own); any other metric on the line is a sample of its own,
    /// as on any wide line.
    private static let workoutMeasureMetrics: Set<HealthMetric> = [.activeEnergy, .distance, .heartRate]

    /// A workout line: one workout sample whose value is its type (`workout_type`, the
    /// `workout` key, or `value` in the long form), its duration in seconds (`duration`) or
    /// minutes (`workout_duration`, `duration_min`), and its measures. docs/streams/health.md, "Workouts".
    private static func workout(_ fields: [String: FieldValue], order: [String],
                                first: (Set<String>) -> (String, FieldValue)?,
                                timestamp: Date?, duration: Double?, unit: String?) -> LineOutcome {
        let typeField = first(HealthFieldNames.workoutType)
            ?? order.lazy.filter { HealthFieldNames.metricAliases[$0]?.0 == .workout }.compactMap { k in fields[k].map { (k, $0) } }.first
            ?? first(HealthFieldNames.value)
        guard let (typeKey, typeValue) = typeField, typeValue != .null else {
            return .malformed("a workout needs workout_type (what kind of workout: running, cycling, …)")
        }
        guard case .text(let type) = typeValue else { return .malformed("\(typeKey) is not text (a workout's type is a name such as running)") }
        if unit != nil {
            return .malformed("unit is ambiguous on a workout line: name the unit in the key instead (distance_km, active_energy_kj)")
        }
        var seconds = duration
        if seconds == nil, let (key, value) = first(HealthFieldNames.durationMinutes) {
            guard let minutes = number(value) else { return .malformed("\(key) is not a number") }
            seconds = minutes * 60
        }
        var measures: [RawHealthSample] = []
        var others: [RawHealthSample] = []
        for k in order {
            guard let (metric, impliedUnit) = HealthFieldNames.metricAliases[k], metric != .workout,
                  let raw = fields[k], raw != .null, raw != .text("") else { continue }
            guard let value = sampleValue(raw, metric: metric) else { return .malformed("\(k) is not a number") }
            let sample = RawHealthSample(metric: metric, value: value, unit: impliedUnit, timestamp: timestamp)
            if workoutMeasureMetrics.contains(metric) { measures.append(sample) } else { others.append(sample) }
        }
        let workout = RawHealthSample(metric: .workout, value: .text(type), timestamp: timestamp,
                                      duration: seconds, workoutMeasures: measures)
        return .samples([workout] + others)
    }

    static func number(_ value: FieldValue) -> Double? {
        switch value {
        case .number(let d): return d.isFinite ? d : nil
        case .text(let s): return NumberText.parse(s)
        case .null, .other: return nil
        }
    }

    /// Sleep values may be stage names; every other metric needs a number.
    private static func sampleValue(_ value: FieldValue, metric: HealthMetric) -> RawHealthValue? {
        if let d = number(value) { return .number(d) }
        if metric == .sleep, case .text(let s) = value, !s.isEmpty { return .text(s) }
        return nil
    }
}

/// Strict decimal numbers: digits, one point, an exponent; never `nan`, `inf` or hex,
/// which `Double(String)` would take.
enum NumberText {
    static func parse<S: StringProtocol>(_ text: S) -> Double? {
        let trimmed = trimSpaces(text)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 64 else { return nil }
        var sawDigit = false
        for c in trimmed.utf8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): sawDigit = true
            case UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): break
            default: return nil
            }
        }
        guard sawDigit, let d = Double(trimmed), d.isFinite else { return nil }
        return d
    }

    /// Spaces and tabs off both ends, without Foundation's character-set machinery.
    static func trimSpaces<S: StringProtocol>(_ text: S) -> Substring {
        let s = Substring(text)
        guard let first = s.firstIndex(where: { $0 != " " && $0 != "\t" }),
              let last = s.lastIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        return s[first...last]
    }
}
