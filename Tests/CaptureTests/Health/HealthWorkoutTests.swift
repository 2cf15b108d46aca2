import AgentCore
@testable import Capture
import Foundation
import Logging
import TestRigs
import XCTest

/// Workouts through the real inputs: a tailed file (JSON Lines, CSV) and a serial port (a
/// socat pty, key=value), into a real queue. Bad workout lines are refused with their
/// reason in the log, and the lines around them still arrive.
final class HealthWorkoutTests: XCTestCase {
    private let start = Date().addingTimeInterval(-3_600)
    private var time: String { RFC3339.string(from: start) }

    private func recordingLogger() -> (Logger, RecordingLogHandler.Store) {
        let store = RecordingLogHandler.Store()
        return (Logger(label: "ariata.health") { _ in RecordingLogHandler(store: store) }, store)
    }

    /// Reads a file of `lines` lines to its end through a file source; the stopped stream
    /// is returned for its counters.
    private func readFile(_ path: String, in bed: HealthTestBed, format: HealthLineFormat = .jsonl, lines: Int,
                          records: Int, logger: Logger = HealthTestBed.logger) throws -> HealthStream {
        let stream = bed.stream(file: path, format: format, logger: logger)
        stream.start()
        defer { stream.stop() }
        try waitUntil("all lines read") { stream.statuses()[0].linesRead == lines }
        try bed.waitForCount(records)
        return stream
    }

    private func workouts(_ bed: HealthTestBed) throws -> [[String: Any]] {
        try bed.payloads().filter { $0["metric_type"] as? String == "workout" }
    }

    func testJSONLinesWorkoutsInLongAndWideFormBecomeWorkoutRecords() throws {
        let bed = try HealthTestBed()
        let path = bed.file("workouts.jsonl")
        let (logger, log) = recordingLogger()
        try FileManager.default.append(
            #"{"timestamp":"\#(time)","metric_type":"workout","workout_type":"running","duration":1830,"active_energy":312.44,"distance_km":5.01,"heart_rate":148.6}"# + "\n"
            + #"{"timestamp":"\#(time)","metric_type":"workout","duration":600}"# + "\n"             // no type
            + #"{"timestamp":"\#(time)","workout":"Cycling","workout_duration":45,"kcal":400,"steps":12}"# + "\n"
            + #"{"timestamp":"\#(time)","workout_type":"yoga","duration":-60}"# + "\n"               // negative duration
            + #"{"timestamp":"\#(time)","workout_type":"rowing","distance":-5}"# + "\n"              // negative distance
            + #"{"timestamp":"\#(time)","workout_type":"walking","distance":800,"unit":"km"}"# + "\n" // ambiguous unit
            + #"{"timestamp":"\#(time)","metric_type":"HKWorkoutTypeIdentifier","value":"HKWorkoutActivityTypeYoga"}"# + "\n",
            to: path)
        let stream = try readFile(path, in: bed, lines: 7, records: 4, logger: logger)

        let records = try workouts(bed)
        XCTAssertEqual(records.map { $0["workout_type"] as? String }, ["running", "cycling", "yoga"])
        XCTAssertEqual(records.map { $0["value"] as? String }, ["running", "cycling", "yoga"])
        let running = records[0]
        XCTAssertEqual(running["workout_duration"] as? Int, 31, "1,830 s in whole minutes")
        XCTAssertEqual(running["active_energy"] as? Double, 312.4)
        XCTAssertEqual(running["distance"] as? Double, 5010)
        XCTAssertEqual(running["heart_rate"] as? Int, 149)
        XCTAssertEqual(running["timestamp"] as? String, time)
        XCTAssertEqual((running["metadata"] as? [String: Any])?["source"] as? String, "test-source")
        XCTAssertEqual(records[1]["workout_duration"] as? Int, 45, "workout_duration is read in minutes")
        XCTAssertEqual(records[1]["active_energy"] as? Double, 400)
        XCTAssertNil(records[2]["workout_duration"], "no duration given, none sent")
        let steps = try bed.payloads().filter { $0["metric_type"] as? String == "steps" }
        XCTAssertEqual(steps.first?["steps"] as? Int, 12, "another metric on a workout line is a sample of its own")

        let status = stream.statuses()[0]
        XCTAssertEqual(status.malformedLines, 2, "no type; the ambiguous unit")
        XCTAssertEqual(status.rejectedSamples, 2, "negative duration; negative distance")
        let warnings = log.messages(.warning).joined(separator: "\n")
        XCTAssertTrue(warnings.contains("workouts.jsonl:2: a workout needs workout_type"), warnings)
        XCTAssertTrue(warnings.contains("workouts.jsonl:4: workout duration -60.0 s is not possible"), warnings)
        XCTAssertTrue(warnings.contains("workouts.jsonl:5: workout distance: distance -5.0 m is negative"), warnings)
        XCTAssertTrue(warnings.contains("workouts.jsonl:6: unit is ambiguous on a workout line"), warnings)
        XCTAssertTrue(stream.liveness().isHealthy, "bad workouts never stop the source")
    }

    func testCSVWorkoutsUnderAHeaderBecomeWorkoutRecords() throws {
        let bed = try HealthTestBed()
        let path = bed.file("workouts.csv")
        try FileManager.default.append("time,metric_type,value,workout_type,duration_min,distance_km,hr\n"
            + "\(time),workout,,Swimming,30,1.2,\n"
            + "\(time),heart_rate,61,,,,\n"
            + "\(time),workout,,,30,1.2,\n", to: path)
        let stream = try readFile(path, in: bed, format: .csv, lines: 4, records: 2)
        let records = try workouts(bed)
        XCTAssertEqual(records.count, 1)
        XCTAssertEqual(records.first?["workout_type"] as? String, "swimming")
        XCTAssertEqual(records.first?["workout_duration"] as? Int, 30)
        XCTAssertEqual(records.first?["distance"] as? Double, 1200)
        XCTAssertNil(records.first?["heart_rate"], "an empty cell is no measure")
        XCTAssertEqual(try bed.payloads().filter { $0["metric_type"] as? String == "heart_rate" }.count, 1)
        XCTAssertEqual(stream.statuses()[0].malformedLines, 1, "the workout row without a type")
    }

    func testSerialKeyValueWorkoutsBecomeWorkoutRecords() throws {
        let bed = try HealthTestBed()
        let rig = try PtyRig(directory: bed.directory.path)
        let (logger, log) = recordingLogger()
        let stream = bed.stream(file: rig.b, format: .keyvalue, kind: .serial, baud: 115_200, logger: logger)
        stream.start()
        defer { stream.stop() }
        try waitUntil("the source to open \(rig.b)") { stream.liveness().isHealthy }
        try rig.send("ts=\(time) workout_type=\"strength training\" duration=2710 active_energy_kj=1000 hr=121\r\n"
            + "ts=\(time) workout_type=hiking duration=0\r\n"
            + "ts=\(time) hr=64\r\n")
        try bed.waitForCount(2)
        try waitUntil("the refused workout to be counted") { stream.statuses()[0].rejectedSamples == 1 }
        stream.stop()
        let records = try workouts(bed)
        XCTAssertEqual(records.count, 1)
        let workout = try XCTUnwrap(records.first)
        XCTAssertEqual(workout["workout_type"] as? String, "strength_training")
        XCTAssertEqual(workout["workout_duration"] as? Int, 45)
        XCTAssertEqual(workout["active_energy"] as? Double, 239)
        XCTAssertEqual(workout["heart_rate"] as? Int, 121)
        XCTAssertEqual(try bed.payloads().filter { $0["metric_type"] as? String == "heart_rate" }.map { $0["heart_rate"] as? Int }, [64])
        XCTAssertTrue(log.messages(.warning).contains { $0.contains("workout duration 0.0 s is not possible (above 0, at most 7 days)") },
                      "\(log.messages(.warning))")
    }
}
