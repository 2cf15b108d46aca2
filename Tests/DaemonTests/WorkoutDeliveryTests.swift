import AgentCore
import Foundation
import TestRigs
import XCTest

/// Workouts from a health file through the real daemon to the reference receiver: each is
/// stored, none refused (the receiver knows the `workout` kind and its string value).
final class WorkoutDeliveryTests: XCTestCase {
    func testWorkoutsFromAFileAreStoredByTheReceiver() throws {
        let directory = try TemporaryDirectory("ariata-workouts")
        let receiver = try ReceiverRig(logDirectory: directory.path, token: "workout-token")
        let health = directory.file("health.jsonl")
        let time = RFC3339.string(from: Date().addingTimeInterval(-600))
        try (#"{"timestamp":"\#(time)","metric_type":"workout","workout_type":"running","duration":1800,"distance_km":5,"kcal":300,"hr":150}"# + "\n"
            + #"{"timestamp":"\#(time)","workout_type":"yoga"}"# + "\n"
            + #"{"timestamp":"\#(time)","hr":61}"# + "\n").write(toFile: health, atomically: true, encoding: .utf8)
        let config = directory.file("agent.toml")
        try """
            [server]
            endpoint = "\(receiver.endpoint)"
            token = "workout-token"
            device_id = "workout-test"
            [storage]
            database = "\(directory.file("agent.sqlite"))"
            [upload]
            interval = 5
            [location]
            enabled = false
            [microphone]
            enabled = false
            [health]
            enabled = true
            commit_interval = 1
            [[health.source]]
            kind = "file"
            path = "\(health)"
            format = "jsonl"
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let agent = try ChildProcess(try BuildProducts.executable("ariata-agent"), ["run", "--config", config],
                                     name: "agent", logDirectory: directory.path)
        defer { agent.stop(grace: 10) }
        try waitUntil("the three samples at the receiver", timeout: 60) { try receiver.stats().stored(.health) == 3 }
        let stats = try receiver.stats()
        XCTAssertEqual(Set(stats.statuses.keys), ["200"], "nothing refused: \(stats.statuses)")
        XCTAssertEqual(stats.duplicates, 0)
    }
}
