import Foundation

/// A value as a line gave it: sleep stages may come as names and a workout's value is its
/// type; everything else is a number.
public enum RawHealthValue: Sendable, Equatable {
    case number(Double)
    case text(String)
}

/// One sample as a parser read it, before the contract's rules are applied.
public struct RawHealthSample: Sendable, Equatable {
    public var metric: HealthMetric
    public var value: RawHealthValue
    /// The unit the input named (from a `unit` field or a key such as `distance_km`); nil
    /// when it named none, which means the metric's canonical unit.
    public var unit: String?
    /// Nil when the line carried no time: the sample is then dated when it is read.
    public var timestamp: Date?
    /// Sleep and workouts: seconds the stage or the workout lasted, where known.
    public var duration: Double?
    /// A workout's active energy, distance and heart rate, each as a sample of that metric
    /// in the unit the line gave it (so they are converted and checked like any sample).
    public var workoutMeasures: [RawHealthSample]

    public init(metric: HealthMetric, value: RawHealthValue, unit: String? = nil,
                timestamp: Date? = nil, duration: Double? = nil, workoutMeasures: [RawHealthSample] = []) {
        self.metric = metric
        self.value = value
        self.unit = unit
        self.timestamp = timestamp
        self.duration = duration
        self.workoutMeasures = workoutMeasures
    }
}

/// What a parser made of one line.
public enum LineOutcome: Sendable, Equatable {
    /// One or more samples (a "wide" line such as `{"hr":72,"steps":10}` gives several).
    case samples([RawHealthSample])
    /// Nothing to import and nothing wrong: a blank line, a `#` comment, a CSV header.
    case ignored
    /// The line cannot be read; the reason names what is wrong.
    case malformed(String)
}
