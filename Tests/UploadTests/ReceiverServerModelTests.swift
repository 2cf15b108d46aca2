import AgentCore
import Foundation
import TestRigs
@testable import Upload
import XCTest

/// The reference receiver as a model of the real servers: lenient where they are (the
/// contract's own checks only with `--strict`), and its report of what each server
/// generation's transforms would read (the contract's table "What the servers make of the
/// records"), fed by the real uploader.
final class ReceiverServerModelTests: XCTestCase {
    private func health(_ fields: [String: any Sendable], at time: Date) throws -> NewRecord {
        var all = fields
        all["timestamp"] = RFC3339.string(from: time)
        return try NewRecord(stream: .health, capturedAt: time, fields: all)
    }

    /// What no server checks: a metric it does not know, no `metadata.source`.
    private func unusualHealth() throws -> NewRecord {
        try health(["metric_type": "body_temperature", "value": 36.6], at: Date().addingTimeInterval(-5))
    }

    func testLenientByDefaultStrictOnRequest() throws {
        let lenient = try UploadFixture(receiverArguments: [], strictReceiver: false)
        try lenient.database.recordQueue.enqueue([try unusualHealth()], anchor: nil)
        XCTAssertTrue(lenient.makeUploader().syncNow().drainedAll)
        XCTAssertEqual(try lenient.receiver.stats().stored(.health), 1, "the servers take it")

        let strict = try UploadFixture()
        try strict.database.recordQueue.enqueue([try unusualHealth()], anchor: nil)
        strict.makeUploader().syncNow()
        XCTAssertEqual(try strict.receiver.stats().stored(.health), 0, "the contract refuses it")
    }

    func testTheReportCountsWhatEachGenerationReads() throws {
        let f = try UploadFixture(strictReceiver: false)
        try f.enqueue(.location, count: 4)
        let t = Date().addingTimeInterval(-60)
        let chunk: [String: any Sendable] = ["timestamp_start": RFC3339.string(from: t.addingTimeInterval(-30)),
                                             "timestamp_end": RFC3339.string(from: t), "duration": 30.0,
                                             "audio_data": TestRecords.fakeOgg(bytes: 100).base64EncodedString()]
        var withDuration = chunk
        withDuration["duration_seconds"] = 30.0
        try f.database.recordQueue.enqueue([try NewRecord(stream: .microphone, capturedAt: t, fields: chunk),
                             try NewRecord(stream: .microphone, capturedAt: t, fields: withDuration)], anchor: nil)
        let samples: [[String: any Sendable]] = [
            // Both shapes: read by both.
            ["metric_type": "heart_rate", "value": 62, "heart_rate": 62],
            // metric_type/value only: Virtues reads it, Ariata does not.
            ["metric_type": "resting_heart_rate", "value": 55],
            // Steps as an integer literal: Virtues reads it; without top-level steps, not Ariata.
            ["metric_type": "steps", "value": 12],
            // Steps as 12.5: neither.
            ["metric_type": "steps", "value": 12.5, "steps": 12.5],
            // Sleep in whole minutes with its stage: both.
            ["metric_type": "sleep", "value": "deep", "sleep_stage": "deep", "sleep_duration": 42,
             "metadata": ["duration_minutes": 42, "source": "t"] as [String: any Sendable]],
            // A workout with its type and whole minutes: both.
            ["metric_type": "workout", "value": "running", "workout_type": "running", "workout_duration": 30],
            // Read by no transform: archived only, out of both counts.
            ["metric_type": "active_energy", "value": 12.5],
        ]
        try f.database.recordQueue.enqueue(try samples.enumerated().map { try health($1, at: t.addingTimeInterval(Double($0))) }, anchor: nil)
        XCTAssertTrue(f.makeUploader().syncNow().drainedAll)

        let report = try f.receiver.readable()
        XCTAssertEqual(report["virtues"]?["location"], .init(received: 4, read: 4))
        XCTAssertEqual(report["ariata"]?["location"], .init(received: 4, read: 4))
        XCTAssertEqual(report["virtues"]?["microphone"], .init(received: 2, read: 1), "duration_seconds is what transcription reads")
        XCTAssertEqual(report["ariata"]?["microphone"], .init(received: 2, read: 1))
        XCTAssertEqual(report["virtues"]?["healthkit"], .init(received: 6, read: 5))
        XCTAssertEqual(report["ariata"]?["healthkit"], .init(received: 6, read: 3))
    }

    /// Both servers' limits on a health record's top-level fields: one record outside them
    /// fails its whole batch (`200`, accepted 0); `value` is never checked.
    func testTheHealthLimitsFailAWholeBatchAsTheServersDo() throws {
        let f = try UploadFixture(strictReceiver: false)
        let t = Date().addingTimeInterval(-60)
        let ordinary: [String: any Sendable] = ["metric_type": "heart_rate", "value": 62, "heart_rate": 62]
        let refused: [[String: any Sendable]] = [
            ["metric_type": "heart_rate", "value": 29, "heart_rate": 29],
            ["metric_type": "resting_heart_rate", "value": 251, "resting_heart_rate": 251],
            ["metric_type": "heart_rate", "value": 62, "heart_rate": 250.5],
            ["metric_type": "heart_rate_variability", "value": 1, "hrv": -0.5],
            ["metric_type": "steps", "value": 1, "steps": -1],
            ["metric_type": "workout", "value": "running", "workout_type": "running", "distance": -2.5],
        ]
        for sample in refused {
            try f.receiver.reset()
            try f.database.recordQueue.enqueue([try health(ordinary, at: t), try health(sample, at: t.addingTimeInterval(1))], anchor: nil)
            f.makeUploader().syncNow()
            let first = try XCTUnwrap(try f.receiver.requests().first)
            XCTAssertEqual(first.accepted, 0, "\(sample)")
            XCTAssertEqual(first.rejected, 2, "one record fails the batch: \(sample)")
            XCTAssertEqual(try f.receiver.stats().stored(.health), 1, "the ordinary one is delivered alone: \(sample)")
        }
        try f.receiver.reset()
        let taken: [[String: any Sendable]] = [
            ["metric_type": "heart_rate", "value": 27],
            ["metric_type": "heart_rate", "value": 268],
            ["metric_type": "heart_rate", "value": 30, "heart_rate": 30],
            ["metric_type": "resting_heart_rate", "value": 250, "resting_heart_rate": 250],
            ["metric_type": "steps", "value": 0, "steps": 0],
            ["metric_type": "heart_rate_variability", "value": 0, "hrv": 0],
            ["metric_type": "workout", "value": "running", "workout_type": "running", "metadata": ["heart_rate": 262] as [String: any Sendable]],
        ]
        try f.database.recordQueue.enqueue(try taken.enumerated().map { try health($1, at: t.addingTimeInterval(Double($0))) }, anchor: nil)
        XCTAssertTrue(f.makeUploader().syncNow().drainedAll)
        XCTAssertEqual(try f.receiver.requests().map(\.status), [200])
        XCTAssertEqual(try f.receiver.stats().stored(.health), taken.count)
    }
}
