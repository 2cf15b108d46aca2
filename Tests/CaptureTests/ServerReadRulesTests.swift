import AgentCore
@testable import Capture
import Foundation
import XCTest

/// Every record kind, as the agent's own encoders write it, traced to what each server
/// generation's transforms read (../shared/contract/ingest.md, "What the servers make of
/// the records"; docs/upload.md): a record a server accepts but no transform reads is lost
/// to its owner all the same, so a kind a server reads must pass that server's rule.
final class ServerReadRulesTests: XCTestCase {
    enum Server: String, CaseIterable { case virtues, ariata }

    /// What a server's transform needs of a record of `stream` to read it; nil when it
    /// reads it. `text` is the record's JSON as sent (an integer literal is checked there).
    static func unread(by server: Server, stream: StreamName, _ record: [String: Any], text: String) -> String? {
        func number(_ key: String) -> Bool { record[key] is NSNumber }
        func string(_ key: String) -> Bool { record[key] is String }
        /// `"key":12`, never `12.0` (the servers' serde reads the literal as i64).
        func integerLiteral(_ key: String) -> Bool {
            text.range(of: "\"\(key)\":-?[0-9]+[,}]", options: .regularExpression) != nil
        }
        let metadata = record["metadata"] as? [String: Any] ?? [:]
        switch stream {
        case .location:
            return number("latitude") && number("longitude") && string("timestamp") ? nil : "latitude, longitude, timestamp"
        case .microphone:
            let start = string("timestamp_start") || (server == .virtues && string("timestamp"))
            return start && string("timestamp_end") && number("duration_seconds") && record["audio_format"] as? String == "ogg"
                ? nil : "timestamp_start, timestamp_end, duration_seconds, audio_format"
        case .health:
            let metric = record["metric_type"] as? String ?? ""
            switch (server, metric) {
            case (.virtues, "heart_rate"), (.virtues, "resting_heart_rate"), (.virtues, "heart_rate_variability"):
                return number("value") ? nil : "a numeric value"
            case (.virtues, "steps"):
                return integerLiteral("value") ? nil : "value as an integer literal"
            case (.virtues, "sleep"):
                let minutes = metadata["duration_minutes"] != nil ? integerLiteral("duration_minutes") : integerLiteral("sleep_duration")
                return minutes && string("sleep_stage") ? nil : "metadata.duration_minutes or sleep_duration (whole minutes) and sleep_stage"
            case (.ariata, "heart_rate"), (.ariata, "resting_heart_rate"):
                return number("heart_rate") ? nil : "a top-level heart_rate"
            case (.ariata, "heart_rate_variability"):
                return number("hrv") ? nil : "a top-level hrv"
            case (.ariata, "steps"):
                return integerLiteral("steps") ? nil : "a top-level steps integer"
            case (.ariata, "sleep"):
                return integerLiteral("sleep_duration") && string("sleep_stage") ? nil : "top-level sleep_duration (whole minutes) and sleep_stage"
            case (.virtues, "workout"):
                // workout_type (or a string value); the optional fields, when present, as
                // serde reads them: workout_duration an i64 (whole minutes), the rest f64.
                let type = string("workout_type") || string("value")
                let optionals = (record["workout_duration"] == nil || integerLiteral("workout_duration"))
                    && ["active_energy", "distance", "heart_rate"].allSatisfy { record[$0] == nil || number($0) }
                return type && optionals ? nil : "workout_type, and workout_duration (whole minutes), active_energy, distance, heart_rate as numbers"
            case (.ariata, "workout"):
                let optionals = (record["workout_duration"] == nil || integerLiteral("workout_duration"))
                    && ["active_energy", "distance", "heart_rate"].allSatisfy { record[$0] == nil || number($0) }
                return string("workout_type") && optionals ? nil : "a top-level workout_type"
            default:
                return "no transform reads \(metric)"
            }
        }
    }

    /// Why both servers refuse a health record before storing its batch (`validate_*` in
    /// `sources/base/validation.rs` and the checks in `sources/ios/healthkit/mod.rs`, the
    /// same in both generations), nil when they store it. serde's `as_f64` reads any
    /// number, `as_i64` only an integer literal; `value` and `metadata` are never checked.
    static func refused(_ record: [String: Any], text: String) -> String? {
        func number(_ key: String) -> Double? {
            (record[key] as? NSNumber)?.doubleValue
        }
        guard record["timestamp"] is String else { return "Missing timestamp in record" }
        for key in ["heart_rate", "resting_heart_rate"] {
            if let bpm = number(key), !(30...250).contains(bpm) { return "Invalid heart rate: \(bpm) bpm. Must be between 30 and 250" }
        }
        if let hrv = number("hrv"), hrv < 0 { return "HRV cannot be negative" }
        if let match = text.range(of: "\"steps\":-?[0-9]+[,}]", options: .regularExpression),
           let steps = Int(text[match].dropFirst(8).dropLast()), steps < 0 { return "Steps cannot be negative" }
        if let distance = number("distance"), distance < 0 { return "Distance cannot be negative" }
        if let fat = number("body_fat_percentage"), !(0...100).contains(fat) { return "Body fat percentage must be 0-100" }
        return nil
    }

    /// Edge values of every kind, as the agent's own encoder writes them: each record the
    /// normaliser accepts passes both servers' validation (one that fails would fail its
    /// whole batch), Virtues reads every kind it reads, and Ariata reads a heart rate only
    /// where its top-level field may go (30..250 bpm).
    func testEdgeValuesPassBothServersValidationAndAreReadWhereTheyCanBe() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let normaliser = HealthNormaliser()
        func raw(_ metric: HealthMetric, _ value: Double) -> RawHealthSample {
            RawHealthSample(metric: metric, value: .number(value), timestamp: now)
        }
        func workout(_ measures: [RawHealthSample]) -> RawHealthSample {
            RawHealthSample(metric: .workout, value: .text("running"), timestamp: now, duration: 600, workoutMeasures: measures)
        }
        // (input, the normaliser keeps it, Ariata reads it)
        var cases: [(RawHealthSample, kept: Bool, ariata: Bool)] = []
        for metric in [HealthMetric.heartRate, .restingHeartRate] {
            cases += [(raw(metric, 27), true, false), (raw(metric, 29), true, false), (raw(metric, 29.4), true, false),
                      (raw(metric, 29.6), true, true), (raw(metric, 30), true, true), (raw(metric, 250), true, true),
                      (raw(metric, 250.4), true, true), (raw(metric, 251), true, false), (raw(metric, 268), true, false),
                      (raw(metric, 0), false, false), (raw(metric, -60), false, false)]
        }
        cases += [(raw(.heartRateVariability, 0.1), true, true), (raw(.heartRateVariability, 0), false, false),
                  (raw(.heartRateVariability, -3), false, false),
                  (raw(.steps, 0), true, true), (raw(.steps, -1), false, false),
                  (raw(.distance, 0), true, false), (raw(.distance, -1), false, false),
                  (raw(.activeEnergy, 0), true, false), (raw(.activeEnergy, -1), false, false),
                  (raw(.oxygenSaturation, 100), true, false), (raw(.oxygenSaturation, 0), false, false),
                  (RawHealthSample(metric: .sleep, value: .text("awake"), timestamp: now, duration: 0), true, true)]
        for bpm in [29.0, 30, 250, 251, -5] {
            cases.append((workout([raw(.heartRate, bpm)]), bpm > 0, true))
        }
        cases += [(workout([raw(.distance, 0)]), true, true), (workout([raw(.distance, -2)]), false, false)]
        var checked = 0
        for (input, kept, ariata) in cases {
            let outcome = normaliser.normalise(input, now: now)
            guard case .accepted(let sample) = outcome else {
                XCTAssertFalse(kept, "\(input) refused: \(outcome)")
                continue
            }
            XCTAssertTrue(kept, "\(input) kept: the agent should refuse it at capture")
            let (fields, text) = try object(try normaliser.record(sample, source: "strap"))
            XCTAssertNil(Self.refused(fields, text: text), "both servers would fail the batch: \(text)")
            if !Self.archivedOnly.contains(input.metric) {
                XCTAssertNil(Self.unread(by: .virtues, stream: .health, fields, text: text), "Virtues cannot read \(text)")
                XCTAssertEqual(Self.unread(by: .ariata, stream: .health, fields, text: text) == nil, ariata, text)
            }
            if input.metric == .workout, let bpm = sample.workout?.heartRate, !(30...250).contains(bpm) {
                let metadata = try XCTUnwrap(fields["metadata"] as? [String: Any])
                XCTAssertEqual(metadata["heart_rate"] as? Int, Int(bpm), "kept in metadata, not lost: \(text)")
            }
            checked += 1
        }
        XCTAssertEqual(checked, cases.filter(\.kept).count)
    }

    /// The validation can fail: records as the agent wrote them before the limits.
    func testTheValidationRefusesTopLevelFieldsOutsideTheLimits() {
        let t = "2027-01-15T08:00:00.000Z"
        for (record, text) in [
            (["timestamp": t, "heart_rate": 27] as [String: Any], #"{"heart_rate":27}"#),
            (["timestamp": t, "resting_heart_rate": 250.5], #"{"resting_heart_rate":250.5}"#),
            (["timestamp": t, "hrv": -0.1], #"{"hrv":-0.1}"#),
            (["timestamp": t, "steps": -1], #"{"steps":-1}"#),
            (["timestamp": t, "distance": -0.01], #"{"distance":-0.01}"#),
            (["heart_rate": 60], #"{"heart_rate":60}"#),
        ] {
            XCTAssertNotNil(Self.refused(record, text: text), text)
        }
        XCTAssertNil(Self.refused(["timestamp": t, "heart_rate": 30, "steps": 0, "value": 12], text: #"{"heart_rate":30,"steps":0}"#))
    }

    /// The health kinds each server archives raw and no transform reads (sent all the same:
    /// a later server may read them).
    static let archivedOnly: Set<HealthMetric> = [.activeEnergy, .distance, .oxygenSaturation]

    func object(_ record: NewRecord) throws -> (fields: [String: Any], text: String) {
        var text = String(decoding: record.payload, as: UTF8.self)
        if let attachment = record.attachment, text.hasSuffix("}") {
            // The queue adds the audio's base64 when it sends the record; its bytes do not
            // matter to the read rules.
            text.removeLast()
            text += ",\"\(attachment.field)\":\"T2dnUw==\"}"
        }
        let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        return (fields, text)
    }

    func testEveryHealthKindTheServersReadIsReadByBothGenerations() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let normaliser = HealthNormaliser()
        let inputs: [HealthMetric: [RawHealthSample]] = [
            .heartRate: [RawHealthSample(metric: .heartRate, value: .number(71.6), timestamp: now)],
            .restingHeartRate: [RawHealthSample(metric: .restingHeartRate, value: .number(48), timestamp: now)],
            .heartRateVariability: [RawHealthSample(metric: .heartRateVariability, value: .number(45.67), timestamp: now)],
            .steps: [RawHealthSample(metric: .steps, value: .number(508), timestamp: now),
                     RawHealthSample(metric: .steps, value: .number(12.0), timestamp: now)],
            .sleep: [RawHealthSample(metric: .sleep, value: .text("deep"), timestamp: now, duration: 2_520),
                     RawHealthSample(metric: .sleep, value: .number(5), timestamp: now, duration: 20)],
            .activeEnergy: [RawHealthSample(metric: .activeEnergy, value: .number(10), unit: "kJ", timestamp: now)],
            .distance: [RawHealthSample(metric: .distance, value: .number(1.5), unit: "km", timestamp: now)],
            .oxygenSaturation: [RawHealthSample(metric: .oxygenSaturation, value: .number(0.97), timestamp: now)],
            .workout: [RawHealthSample(metric: .workout, value: .text("running"), timestamp: now, duration: 1_830, workoutMeasures: [
                           RawHealthSample(metric: .activeEnergy, value: .number(312.44), timestamp: now),
                           RawHealthSample(metric: .distance, value: .number(5.01), unit: "km", timestamp: now),
                           RawHealthSample(metric: .heartRate, value: .number(148.6), timestamp: now)]),
                       RawHealthSample(metric: .workout, value: .text("HKWorkoutActivityTypeYoga"), timestamp: now)],
        ]
        XCTAssertEqual(Set(inputs.keys), Set(HealthMetric.allCases), "every kind the agent sends is traced")
        for metric in HealthMetric.allCases {
            for raw in inputs[metric] ?? [] {
                guard case .accepted(let sample) = normaliser.normalise(raw, now: now) else { return XCTFail("\(raw) rejected") }
                let (fields, text) = try object(try normaliser.record(sample, source: "watch"))
                for server in Server.allCases {
                    let why = Self.unread(by: server, stream: .health, fields, text: text)
                    if Self.archivedOnly.contains(metric) {
                        XCTAssertNotNil(why, "\(metric) is read by \(server) now: update the contract's table and this test")
                    } else {
                        XCTAssertNil(why, "\(server) cannot read \(metric): needs \(why ?? ""): \(text)")
                    }
                }
            }
        }
    }

    func testSleepDurationsAreWholeMinutesAndAtLeastOne() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let normaliser = HealthNormaliser()
        for (seconds, minutes) in [(20.0, 1), (89.0, 1), (90.0, 2), (2_520.0, 42), (28_800.4, 480)] {
            let raw = RawHealthSample(metric: .sleep, value: .text("core"), timestamp: now, duration: seconds)
            guard case .accepted(let sample) = normaliser.normalise(raw, now: now) else { return XCTFail("rejected") }
            let (fields, _) = try object(try normaliser.record(sample, source: "ring"))
            XCTAssertEqual(fields["sleep_duration"] as? Int, minutes, "\(seconds) s")
            XCTAssertEqual((fields["metadata"] as? [String: Any])?["duration_minutes"] as? Int, minutes, "\(seconds) s")
        }
    }

    func testWorkoutFieldsAreInTheUnitsTheServersRead() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let normaliser = HealthNormaliser()
        let raw = RawHealthSample(metric: .workout, value: .text("Strength Training"), timestamp: now, duration: 2_710, workoutMeasures: [
            RawHealthSample(metric: .activeEnergy, value: .number(1000), unit: "kJ", timestamp: now),
            RawHealthSample(metric: .distance, value: .number(1.5), unit: "mi", timestamp: now),
            RawHealthSample(metric: .heartRate, value: .number(2.5), unit: "Hz", timestamp: now)])
        guard case .accepted(let sample) = normaliser.normalise(raw, now: now) else { return XCTFail("rejected") }
        let (fields, text) = try object(try normaliser.record(sample, source: "watch"))
        XCTAssertEqual(fields["metric_type"] as? String, "workout")
        XCTAssertEqual(fields["value"] as? String, "strength_training")
        XCTAssertEqual(fields["workout_type"] as? String, "strength_training")
        XCTAssertTrue(text.contains("\"workout_duration\":45,"), "2,710 s is 45 whole minutes: \(text)")
        XCTAssertEqual(fields["active_energy"] as? Double, 239.0, "kcal")
        XCTAssertEqual(fields["distance"] as? Double, 2414.02, "metres")
        XCTAssertEqual(fields["heart_rate"] as? Int, 150, "bpm")
        XCTAssertEqual(fields["unit"] as? String, "category")
    }

    func testLocationAndMicrophoneRecordsAreReadByBothGenerations() throws {
        let fix = LocationFix(mode: 3, time: FixTime(seconds: 1_789_999_990, nanoseconds: 250_000_000),
                         latitude: 52.52, longitude: 13.405, altitude: 34, source: .gpsd)
        let location = try LocationRecord.make(from: fix, now: Date(timeIntervalSince1970: 1_790_000_000))
        let wifi = LocationFix(mode: nil, time: FixTime(seconds: 1_789_999_990, nanoseconds: 0), latitude: 52.52, longitude: 13.405,
                               horizontalAccuracy: 40, method: LocationMethod(.wifi, basis: .description), source: .geoclue)
        let geoClue = try LocationRecord.make(from: wifi, now: Date(timeIntervalSince1970: 1_790_000_000))
        let (geoClueFields, geoClueText) = try object(geoClue)
        for server in Server.allCases {
            XCTAssertNil(Self.unread(by: server, stream: .location, geoClueFields, text: geoClueText), "\(server): \(geoClueText)")
        }
        // Every generation's location transform keeps only `raw_data` of what it does not
        // read (as metadata.ios_raw): the method must be in it to survive there.
        XCTAssertEqual((geoClueFields["raw_data"] as? [String: Any])?["location_method"] as? String, "wifi", geoClueText)
        let chunk = AudioChunk(start: Date(timeIntervalSince1970: 1_790_000_000), frames: 480_000, overlapFrames: 32_000,
                               sampleRate: 16_000, data: Data("OggS".utf8))
        let microphone = try MicrophoneRecord.make(chunk, bitrate: 16_000)
        for (stream, record) in [(StreamName.location, location), (.microphone, microphone)] {
            let (fields, text) = try object(record)
            for server in Server.allCases {
                let why = Self.unread(by: server, stream: stream, fields, text: text)
                XCTAssertNil(why, "\(server) cannot read \(stream): needs \(why ?? ""): \(text)")
            }
        }
        let (fields, _) = try object(microphone)
        XCTAssertEqual(fields["duration_seconds"] as? Double, 30)
        XCTAssertEqual(fields["duration"] as? Double, 30, "the contract's own field stays")
        XCTAssertNil(fields["average_db_level"], "a chunk without a level (recovered from the journal) claims none")
    }

    /// The successor iOS collector's two fields, as it names and types them.
    func testAChunkCarriesItsLevelAndWhetherItIsSilent() throws {
        var level = AudioLevel()
        let quiet = [Int16](repeating: 100, count: 16_000) // -50.3 dBFS
        quiet.withUnsafeBufferPointer { level.add($0) }
        let chunk = AudioChunk(start: Date(timeIntervalSince1970: 1_790_000_000), frames: 16_000, overlapFrames: 0,
                               sampleRate: 16_000, data: Data("OggS".utf8), level: level)
        for (threshold, silent) in [(-50, true), (-51, false)] {
            let (fields, text) = try object(try MicrophoneRecord.make(chunk, bitrate: 16_000, silenceThresholdDB: threshold))
            XCTAssertEqual(fields["average_db_level"] as? Double, -50.3, text)
            XCTAssertEqual(fields["is_silent"] as? Bool, silent, "threshold \(threshold): \(text)")
            XCTAssertTrue(text.contains("\"is_silent\":\(silent)"), "a JSON boolean: \(text)")
        }
    }

    /// The rules can fail: records as the agent wrote them before both shapes were sent.
    func testTheRulesRefuseRecordsNoTransformReads() {
        let heartRate: [String: Any] = ["metric_type": "heart_rate", "value": 72, "metadata": ["source": "x"]]
        XCTAssertNil(Self.unread(by: .virtues, stream: .health, heartRate, text: #"{"metric_type":"heart_rate","value":72}"#))
        XCTAssertNotNil(Self.unread(by: .ariata, stream: .health, heartRate, text: #"{"metric_type":"heart_rate","value":72}"#))
        let sleepInSeconds: [String: Any] = ["metric_type": "sleep", "value": 4, "metadata": ["sleep_duration": 600, "sleep_stage": "deep"]]
        let text = #"{"metadata":{"sleep_duration":600,"sleep_stage":"deep"},"metric_type":"sleep","value":4}"#
        XCTAssertNotNil(Self.unread(by: .virtues, stream: .health, sleepInSeconds, text: text))
        XCTAssertNotNil(Self.unread(by: .ariata, stream: .health, sleepInSeconds, text: text))
        let steps: [String: Any] = ["metric_type": "steps", "value": 12.5, "steps": 12.5]
        XCTAssertNotNil(Self.unread(by: .virtues, stream: .health, steps, text: #"{"metric_type":"steps","steps":12.5,"value":12.5}"#))
        let workoutInSeconds: [String: Any] = ["metric_type": "workout", "value": "running", "workout_type": "running", "workout_duration": 1830.0]
        let workoutText = #"{"metric_type":"workout","value":"running","workout_duration":1830.0,"workout_type":"running"}"#
        XCTAssertNotNil(Self.unread(by: .virtues, stream: .health, workoutInSeconds, text: workoutText))
        let workoutWithoutType: [String: Any] = ["metric_type": "workout", "value": 30]
        XCTAssertNotNil(Self.unread(by: .ariata, stream: .health, workoutWithoutType, text: #"{"metric_type":"workout","value":30}"#))
        let chunk: [String: Any] = ["timestamp_start": "t", "timestamp_end": "t", "duration": 30.0, "audio_format": "ogg"]
        XCTAssertNotNil(Self.unread(by: .virtues, stream: .microphone, chunk, text: ""), "duration is not duration_seconds")
    }
}
