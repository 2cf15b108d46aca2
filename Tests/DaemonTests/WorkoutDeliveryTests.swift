import AgentCore
import Foundation
import TestRigs
import XCTest

/// Workouts from the health file through the real daemon to the reference receiver: each
/// is stored, none refused (the receiver knows the `workout` kind and its string value).
final class WorkoutDeliveryTests: XCTestCase {
    func testWorkoutsFromAFileAreStoredByTheReceiver() throws {
        let rig = try DaemonRig(checkInterval: 1, locationEnabled: false, microphoneConfig: "enabled = false")
        try rig.startAgent()
        let time = RFC3339.string(from: Date().addingTimeInterval(-600))
        let lines: [String] = [
            #"{"timestamp":"\#(time)","metric_type":"workout","workout_type":"running","duration":1800,"distance_km":5,"kcal":300,"hr":150}"#,
            #"{"timestamp":"\#(time)","workout_type":"yoga"}"#,
            #"{"timestamp":"\#(time)","hr":61}"#,
        ]
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: rig.healthPath))
        try handle.write(contentsOf: Data(lines.map { $0 + "\n" }.joined().utf8))
        try handle.close()
        try waitUntil("the three samples at the receiver", timeout: 60) { try rig.receiver.stats().stored(.health) == 3 }
        let stats = try rig.receiver.stats()
        XCTAssertEqual(Set(stats.statuses.keys), ["200"], "nothing refused: \(stats.statuses)")
        XCTAssertEqual(stats.duplicates, 0)
    }
}
