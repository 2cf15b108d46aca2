/// Sleep stages as raw category codes (HealthKit's HKCategoryValueSleepAnalysis, which
/// the Ariata server's pipeline reads) and their names.
enum SleepStage: Int, CaseIterable {
    case inBed = 0
    case asleep = 1
    case awake = 2
    case core = 3
    case deep = 4
    case rem = 5

    var name: String {
        switch self {
        case .inBed: return "in_bed"
        case .asleep: return "asleep"
        case .awake: return "awake"
        case .core: return "core"
        case .deep: return "deep"
        case .rem: return "rem"
        }
    }

    /// A stage given by name; `light` is what most trackers call HealthKit's core sleep.
    init?(name: String) {
        switch HealthFieldNames.normalise(name) {
        case "in_bed", "inbed", "bed": self = .inBed
        case "asleep", "asleep_unspecified", "sleep", "sleeping": self = .asleep
        case "awake", "wake": self = .awake
        case "core", "light", "asleep_core": self = .core
        case "deep", "asleep_deep": self = .deep
        case "rem", "asleep_rem": self = .rem
        default: return nil
        }
    }
}
