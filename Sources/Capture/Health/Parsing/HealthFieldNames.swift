/// The field names and aliases the parsers understand (documented in docs/streams/health.md).
/// Keys are compared after `normalise`: lower case, `-` and spaces read as `_`.
enum HealthFieldNames {
    static let timestamp: Set<String> = ["timestamp", "time", "ts", "t", "date", "datetime", "start", "start_time", "startdate"]
    static let metric: Set<String> = ["metric_type", "metric", "type"]
    static let value: Set<String> = ["value", "val", "v"]
    static let unit: Set<String> = ["unit", "units"]
    static let duration: Set<String> = ["duration", "sleep_duration", "duration_s"]
    static let stage: Set<String> = ["sleep_stage", "stage"]
    /// A workout's kind (`running`); a line with one is a workout.
    static let workoutType: Set<String> = ["workout_type", "workouttype", "workout_activity_type", "activity_type"]
    /// A workout's duration in minutes (`workout_duration` is the record's own field, in minutes).
    static let durationMinutes: Set<String> = ["workout_duration", "duration_min", "duration_minutes"]

    /// A metric named by a key (wide form, `{"hr": 72}`) or by a `metric_type` value, and
    /// the unit the name implies (`distance_km`), nil for the canonical one.
    static let metricAliases: [String: (HealthMetric, String?)] = {
        var table: [String: (HealthMetric, String?)] = [:]
        func add(_ metric: HealthMetric, _ unit: String?, _ names: [String]) {
            for name in names { table[name] = (metric, unit) }
        }
        add(.heartRate, nil, ["heart_rate", "heartrate", "hr", "bpm", "pulse"])
        add(.restingHeartRate, nil, ["resting_heart_rate", "restingheartrate", "resting_hr", "rhr"])
        add(.heartRateVariability, nil, ["heart_rate_variability", "heartratevariabilitysdnn", "hrv", "hrv_sdnn", "sdnn", "hrv_ms"])
        add(.steps, nil, ["steps", "step_count", "stepcount"])
        add(.activeEnergy, nil, ["active_energy", "activeenergyburned", "active_energy_burned", "active_calories", "calories", "kcal", "active_energy_kcal"])
        add(.activeEnergy, "kj", ["active_energy_kj", "kj", "kilojoules"])
        add(.distance, nil, ["distance", "distance_m", "distancewalkingrunning", "meters", "metres"])
        add(.distance, "km", ["distance_km", "km"])
        add(.distance, "mi", ["distance_mi", "miles"])
        add(.oxygenSaturation, nil, ["oxygen_saturation", "oxygensaturation", "spo2", "sp_o2", "blood_oxygen", "o2_saturation"])
        add(.sleep, nil, ["sleep", "sleep_stage", "sleepanalysis", "sleep_analysis"])
        add(.workout, nil, ["workout", "hkworkouttypeidentifier"])
        return table
    }()

    /// Lower case with `-`/space as `_`; HealthKit identifiers lose their prefix
    /// (`HKQuantityTypeIdentifierHeartRate` → `heartrate`).
    static func normalise(_ key: String) -> String {
        // Fast path: most keys are already lower-case ASCII words (`hr`, `timestamp`).
        if key.utf8.allSatisfy({ ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 }) { return key }
        var bytes = Array(key.lowercased().utf8)
        for i in bytes.indices where bytes[i] == 45 || bytes[i] == 32 { bytes[i] = 95 } // '-', ' ' → '_'
        var k = String(decoding: bytes, as: UTF8.self)
        for prefix in ["hkquantitytypeidentifier", "hkcategorytypeidentifier"] where k.utf8.starts(with: prefix.utf8) {
            k = String(decoding: k.utf8.dropFirst(prefix.utf8.count), as: UTF8.self)
        }
        return k
    }

    static func metric(named name: String) -> (HealthMetric, String?)? {
        metricAliases[normalise(name)]
    }
}
