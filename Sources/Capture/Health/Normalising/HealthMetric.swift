/// The metric types of the contract's health stream, with the unit each is sent in.
public enum HealthMetric: String, CaseIterable, Sendable {
    case heartRate = "heart_rate"
    case restingHeartRate = "resting_heart_rate"
    case heartRateVariability = "heart_rate_variability"
    case steps
    case activeEnergy = "active_energy"
    case distance
    case oxygenSaturation = "oxygen_saturation"
    case sleep
    /// One workout: its type is the value, its duration, energy, distance and heart rate
    /// ride along (docs/streams/health.md, "Workouts").
    case workout

    /// The unit the contract sends this metric in.
    public var canonicalUnit: String {
        switch self {
        case .heartRate, .restingHeartRate: return "bpm"
        case .heartRateVariability: return "ms"
        case .steps: return "count"
        case .activeEnergy: return "kcal"
        case .distance: return "m"
        case .oxygenSaturation: return "percent"
        case .sleep, .workout: return "category"
        }
    }
}
