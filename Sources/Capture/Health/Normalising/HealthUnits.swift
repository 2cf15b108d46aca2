import Foundation

/// Unit names the input may use, per metric, and the factor to the contract's unit.
/// Names are compared in lower case. A unit not listed is refused rather than guessed.
enum HealthUnits {
    static let factors: [HealthMetric: [String: Double]] = {
        let bpm: [String: Double] = ["bpm": 1, "count/min": 1, "beats/min": 1, "/min": 1, "1/min": 1, "hz": 60]
        return [
            .heartRate: bpm,
            .restingHeartRate: bpm,
            .heartRateVariability: ["ms": 1, "s": 1000, "sec": 1000],
            .steps: ["count": 1, "steps": 1, "step": 1],
            .activeEnergy: ["kcal": 1, "kilocalories": 1, "kj": 1 / 4.184, "kilojoules": 1 / 4.184, "j": 1 / 4184],
            .distance: ["m": 1, "meter": 1, "meters": 1, "metre": 1, "metres": 1, "km": 1000, "cm": 0.01,
                        "mi": 1609.344, "mile": 1609.344, "miles": 1609.344, "ft": 0.3048, "yd": 0.9144],
            .oxygenSaturation: ["%": 1, "percent": 1, "pct": 1, "fraction": 100, "ratio": 100],
            .sleep: ["category": 1],
        ]
    }()

    /// The factor, or nil for a unit this metric cannot be in. No unit means canonical.
    static func factor(_ unit: String?, for metric: HealthMetric) -> Double? {
        guard let unit = unit.map({ String(NumberText.trimSpaces($0)) }), !unit.isEmpty else { return 1 }
        return factors[metric]?[unit.lowercased()]
    }
}
