import AgentCore
@testable import Capture
import Foundation
import XCTest

/// Each rule of the contract's health normalisation and each unit conversion.
final class HealthNormaliserTests: XCTestCase {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let normaliser = HealthNormaliser()

    private func sample(_ metric: HealthMetric, _ value: Double, _ unit: String? = nil, at time: Date? = nil) -> RawHealthSample {
        RawHealthSample(metric: metric, value: .number(value), unit: unit, timestamp: time ?? now.addingTimeInterval(-60))
    }

    func testAcceptedValuesAreConvertedAndRounded() {
        let table: [(RawHealthSample, Double, String)] = [
            // Heart rates: whole bpm.
            (sample(.heartRate, 72.4), 72, "HR rounds down below .5"),
            (sample(.heartRate, 72.5), 73, "HR rounds half away from zero"),
            (sample(.heartRate, 300), 300, "HR 300 is the upper bound"),
            (sample(.heartRate, 1.2, "Hz"), 72, "Hz → bpm"),
            (sample(.heartRate, 64, "count/min"), 64, "count/min is bpm"),
            (sample(.restingHeartRate, 55.6, "bpm"), 56, "resting HR whole bpm"),
            // HRV: ms, 1 decimal.
            (sample(.heartRateVariability, 45.67), 45.7, "HRV one decimal"),
            (sample(.heartRateVariability, 0.0456, "s"), 45.6, "s → ms"),
            // Steps: whole.
            (sample(.steps, 10.4), 10, "steps whole"),
            (sample(.steps, 0), 0, "zero steps is a sample"),
            // Distance: m, 2 decimals.
            (sample(.distance, 12.346), 12.35, "distance two decimals"),
            (sample(.distance, 1.234, "km"), 1234, "km → m"),
            (sample(.distance, 1, "mi"), 1609.34, "mi → m"),
            (sample(.distance, 100, "ft"), 30.48, "ft → m"),
            (sample(.distance, 250, "cm"), 2.5, "cm → m"),
            // Active energy: kcal, 1 decimal.
            (sample(.activeEnergy, 12.34), 12.3, "kcal one decimal"),
            (sample(.activeEnergy, 10, "kJ"), 2.4, "kJ → kcal"),
            (sample(.activeEnergy, 4184, "J"), 1.0, "J → kcal"),
            // SpO2: whole percent.
            (sample(.oxygenSaturation, 97.6), 98, "SpO2 whole percent"),
            (sample(.oxygenSaturation, 0.97), 97, "a fraction without a unit is a fraction"),
            (sample(.oxygenSaturation, 0.941, "fraction"), 94, "fraction → percent"),
            (sample(.oxygenSaturation, 100, "%"), 100, "100 % is possible"),
        ]
        for (raw, expected, rule) in table {
            guard case .accepted(let s) = normaliser.normalise(raw, now: now) else {
                XCTFail("\(rule): rejected \(raw)")
                continue
            }
            XCTAssertEqual(s.value, expected, accuracy: 1e-9, rule)
            XCTAssertEqual(s.unit, raw.metric.canonicalUnit, rule)
        }
    }

    func testImpossibleValuesAndTimesAreRejected() {
        let table: [(RawHealthSample, String)] = [
            (sample(.heartRate, 0), "HR 0"),
            (sample(.heartRate, -5), "HR negative"),
            (sample(.heartRate, 300.5), "HR above 300"),
            (sample(.restingHeartRate, 400), "resting HR above 300"),
            (sample(.oxygenSaturation, 101), "SpO2 above 100"),
            (sample(.oxygenSaturation, 0), "SpO2 0"),
            (sample(.steps, -1), "negative steps"),
            (sample(.distance, -3, "km"), "negative distance"),
            (sample(.activeEnergy, -1), "negative energy"),
            (sample(.heartRateVariability, 0), "HRV 0"),
            (sample(.heartRate, .nan), "NaN"),
            (sample(.heartRate, .infinity), "infinity"),
            (sample(.heartRate, 70, "furlongs"), "unknown unit"),
            (sample(.distance, 5, "kcal"), "a unit of another metric"),
            (sample(.heartRate, 70, at: Date(timeIntervalSince1970: 946_684_799)), "before 2000"),
            (sample(.heartRate, 70, at: now.addingTimeInterval(301)), "more than 5 minutes ahead"),
            (RawHealthSample(metric: .sleep, value: .number(7), timestamp: now), "sleep code out of range"),
            (RawHealthSample(metric: .sleep, value: .number(2.5), timestamp: now), "sleep code not whole"),
            (RawHealthSample(metric: .sleep, value: .text("nap"), timestamp: now), "unknown sleep stage"),
            (RawHealthSample(metric: .sleep, value: .text("deep"), timestamp: now, duration: -1), "negative sleep duration"),
            (RawHealthSample(metric: .workout, value: .text("running"), timestamp: now, duration: 0), "workout of 0 s"),
            (RawHealthSample(metric: .workout, value: .text("running"), timestamp: now, duration: 8 * 86_400), "workout over a week"),
            (RawHealthSample(metric: .workout, value: .text("run 🏃"), timestamp: now), "workout type not a name"),
            (RawHealthSample(metric: .workout, value: .text(String(repeating: "a", count: 65)), timestamp: now), "workout type too long"),
            (RawHealthSample(metric: .workout, value: .text("   "), timestamp: now), "workout type blank"),
            (RawHealthSample(metric: .workout, value: .number(3), timestamp: now), "workout type a number"),
            (RawHealthSample(metric: .workout, value: .text("running"), timestamp: now, workoutMeasures: [sample(.heartRate, 400)]),
             "workout heart rate above 300"),
            (RawHealthSample(metric: .workout, value: .text("running"), timestamp: now, workoutMeasures: [sample(.activeEnergy, -1)]),
             "workout energy negative"),
        ]
        for (raw, rule) in table {
            guard case .rejected(let reason) = normaliser.normalise(raw, now: now) else {
                XCTFail("\(rule): accepted \(raw)")
                continue
            }
            XCTAssertFalse(reason.isEmpty, rule)
        }
        // The bounds themselves are fine.
        guard case .accepted = normaliser.normalise(sample(.heartRate, 70, at: now.addingTimeInterval(299)), now: now) else {
            return XCTFail("a time 299 s ahead is within the 5 minutes")
        }
    }

    func testSleepKeepsRawCategoryWithStageNameAndDuration() throws {
        let cases: [(RawHealthValue, Int, String)] = [
            (.text("deep"), 4, "deep"), (.text("REM"), 5, "rem"), (.text("light"), 3, "core"),
            (.text("awake"), 2, "awake"), (.text("in_bed"), 0, "in_bed"), (.number(1), 1, "asleep"),
            (.number(5), 5, "rem"),
        ]
        for (value, code, name) in cases {
            let raw = RawHealthSample(metric: .sleep, value: value, timestamp: now, duration: 1800.4)
            guard case .accepted(let s) = normaliser.normalise(raw, now: now) else { return XCTFail("\(value) rejected") }
            XCTAssertEqual(s.value, Double(code))
            XCTAssertEqual(s.sleepStage, name)
            XCTAssertEqual(s.sleepDuration, 1800)
        }
    }

    func testMissingTimestampIsTheReadingTime() {
        let raw = RawHealthSample(metric: .heartRate, value: .number(70))
        guard case .accepted(let s) = normaliser.normalise(raw, now: now) else { return XCTFail("rejected") }
        XCTAssertEqual(s.timestamp, now)
    }

    func testRecordHasContractFieldsWholeNumbersAndSource() throws {
        guard case .accepted(let hr) = normaliser.normalise(sample(.heartRate, 71.6), now: now),
              case .accepted(let dist) = normaliser.normalise(sample(.distance, 1.5, "km"), now: now),
              case .accepted(let sleep) = normaliser.normalise(
                RawHealthSample(metric: .sleep, value: .text("deep"), timestamp: now, duration: 600), now: now)
        else { return XCTFail("rejected") }
        let record = try normaliser.record(hr, source: "polar-h10")
        let text = String(decoding: record.payload, as: UTF8.self)
        XCTAssertTrue(text.contains(#""value":72}"#), text) // a whole number, not 72.0
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: record.payload) as? [String: Any])
        XCTAssertEqual(Set(object.keys), ["id", "timestamp", "metric_type", "value", "unit", "metadata", "heart_rate"],
                       "the contract's fields, and the top-level field the Ariata server reads")
        XCTAssertEqual(object["heart_rate"] as? Int, 72)
        XCTAssertEqual(object["id"] as? String, record.id.uuidString.lowercased())
        XCTAssertEqual(object["metric_type"] as? String, "heart_rate")
        XCTAssertEqual(object["unit"] as? String, "bpm")
        XCTAssertEqual(object["timestamp"] as? String, RFC3339.string(from: now.addingTimeInterval(-60)))
        XCTAssertEqual((object["metadata"] as? [String: Any])?["source"] as? String, "polar-h10")
        XCTAssertEqual(record.capturedAt, now.addingTimeInterval(-60))

        let distText = String(decoding: try normaliser.record(dist, source: "x").payload, as: UTF8.self)
        XCTAssertTrue(distText.contains(#""value":1500"#) && distText.contains(#""unit":"m""#), distText)

        // The contract's sleep record: the stage's name as the value and at the top level,
        // the duration in whole minutes at the top level and in metadata.
        let sleepObject = try XCTUnwrap(JSONSerialization.jsonObject(with: try normaliser.record(sleep, source: "ring").payload) as? [String: Any])
        let metadata = try XCTUnwrap(sleepObject["metadata"] as? [String: Any])
        XCTAssertEqual(sleepObject["value"] as? String, "deep")
        XCTAssertEqual(sleepObject["sleep_stage"] as? String, "deep")
        XCTAssertEqual(sleepObject["sleep_duration"] as? Int, 10)
        XCTAssertEqual(metadata["duration_minutes"] as? Int, 10)
        XCTAssertEqual(metadata["source"] as? String, "ring")
    }

    /// The hand-written encoder gives the very bytes `NewRecord(fields:)` (RecordJSON) and
    /// JSONSerialization give.
    func testRecordEncoderMatchesJSONSerialization() throws {
        let raws: [RawHealthSample] = [
            sample(.heartRate, 71.6), sample(.distance, 1.234, "km"), sample(.distance, 0.05),
            sample(.activeEnergy, 10, "kJ"), sample(.activeEnergy, 0), sample(.heartRateVariability, 45.67),
            sample(.oxygenSaturation, 0.97), sample(.steps, 123_456_789),
            RawHealthSample(metric: .sleep, value: .text("deep"), timestamp: now, duration: 1800),
            RawHealthSample(metric: .sleep, value: .text("rem"), timestamp: now, duration: 20),
            RawHealthSample(metric: .sleep, value: .number(2), timestamp: now), sample(.restingHeartRate, 48),
            RawHealthSample(metric: .workout, value: .text("cycling"), timestamp: now, duration: 3_600,
                            workoutMeasures: [sample(.activeEnergy, 512.36), sample(.distance, 20.5, "km"), sample(.heartRate, 131)]),
            RawHealthSample(metric: .workout, value: .text("Yoga"), timestamp: now, workoutMeasures: [sample(.distance, 0.05)]),
            // Outside the servers' 30..250: no top-level field (a workout's goes to metadata).
            sample(.heartRate, 27), sample(.restingHeartRate, 268),
            RawHealthSample(metric: .workout, value: .text("rowing"), timestamp: now, duration: 600,
                            workoutMeasures: [sample(.distance, 2.5, "km"), sample(.heartRate, 262)]),
        ]
        for raw in raws {
            guard case .accepted(let s) = normaliser.normalise(raw, now: now) else { return XCTFail("rejected \(raw)") }
            for source in ["polar-h10", "/var/log/hr.jsonl", "Mia's \"ring\" \\ ünï 💓", "tab\there"] {
                let record = try normaliser.record(s, source: source)
                let fields = normaliser.referenceFields(s, source: source)
                let reference = try NewRecord(id: record.id, stream: .health, capturedAt: s.timestamp, fields: fields)
                var object = fields
                object["id"] = record.id.uuidString.lowercased()
                let foundation = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
                XCTAssertEqual(String(decoding: record.payload, as: UTF8.self), String(decoding: reference.payload, as: UTF8.self))
                XCTAssertEqual(String(decoding: record.payload, as: UTF8.self), String(decoding: foundation, as: UTF8.self))
                XCTAssertEqual(record.capturedAt, reference.capturedAt)
            }
        }
    }
}
