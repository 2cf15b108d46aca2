import AgentCore
import Foundation
import TestRigs
import XCTest

/// Heart rates outside the servers' 30..250 bpm (a sleeping athlete, an optical sensor's
/// glitch) from a health file, through the real daemon to the receiver, which fails a
/// whole batch for one top-level field outside its limits as both servers do: every sample
/// is delivered, no request is refused, and Virtues' rules read every one
/// (docs/upload.md, "What the servers refuse").
final class HeartRateLimitsDeliveryTests: XCTestCase {
    func testReadingsOutsideTheServersLimitsAreDeliveredWithoutARefusal() throws {
        let rig = try DaemonRig(checkInterval: 1, locationEnabled: false, microphoneConfig: "enabled = false")
        try rig.startAgent()
        let start = Date().addingTimeInterval(-3_600)
        let odd: [Int: Int] = [50: 27, 200: 29, 300: 252, 450: 268]
        let lines = (0..<512).map { i -> String in
            let time = RFC3339.string(from: start.addingTimeInterval(Double(i) * 5))
            return #"{"timestamp":"\#(time)","metric_type":"heart_rate","value":\#(odd[i] ?? 55 + i % 60),"unit":"bpm"}"#
        }
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: rig.healthPath))
        try handle.write(contentsOf: Data(lines.map { $0 + "\n" }.joined().utf8))
        try handle.close()
        try waitUntil("the 512 samples at the receiver", timeout: 90) { try rig.receiver.stats().stored(.health) == 512 }

        let requests = try rig.receiver.requests(stream: .health)
        XCTAssertEqual(requests.filter { $0.status != 200 || ($0.rejected ?? 0) > 0 }.count, 0,
                       "no refused request: \(requests.map { "\($0.statusText) \($0.accepted ?? -1)/\($0.rejected ?? -1)" })")
        XCTAssertEqual(try rig.receiver.stats().duplicates, 0)
        let report = try rig.receiver.readable()
        XCTAssertEqual(report["virtues"]?["healthkit"], .init(received: 512, read: 512), "Virtues reads value")
        XCTAssertEqual(report["ariata"]?["healthkit"], .init(received: 512, read: 508),
                       "Ariata reads the top-level field, which the four outside its limits cannot carry")
        let database = try rig.openDatabase()
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .failed), 0, "no record failed")
    }
}
