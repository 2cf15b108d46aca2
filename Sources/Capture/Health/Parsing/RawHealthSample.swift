import Foundation

/// A value as a line gave it: sleep stages may come as names, everything else as numbers.
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
    /// Sleep only: seconds the stage lasted, where known.
    public var duration: Double?

    public init(metric: HealthMetric, value: RawHealthValue, unit: String? = nil,
                timestamp: Date? = nil, duration: Double? = nil) {
        self.metric = metric
        self.value = value
        self.unit = unit
        self.timestamp = timestamp
        self.duration = duration
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
