/// What both server generations check of a health record's top-level fields before they
/// store a batch. One record outside these limits fails its whole batch (`200`, accepted
/// 0), so a top-level field goes out only inside them; outside, the record travels as
/// `metric_type`/`value` alone, which only Virtues reads but both accept
/// (docs/upload.md, "What the servers refuse").
///
/// Only the top-level fields are checked: `value` and `metadata` never are.
enum ServerFieldLimits {
    /// `heart_rate` and `resting_heart_rate`, in bpm, bounds included.
    static let heartRate: ClosedRange<Double> = 30...250

    /// Whether a top-level `heart_rate` (or `resting_heart_rate`) of `bpm` passes.
    static func acceptsHeartRate(_ bpm: Double) -> Bool { heartRate.contains(bpm) }

    /// Whether a top-level `hrv`, `steps` or `distance` of `value` passes: not negative.
    static func acceptsMeasure(_ value: Double) -> Bool { value >= 0 }
}
