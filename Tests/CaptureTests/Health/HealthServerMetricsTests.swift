import AgentCore
@testable import Capture
import Foundation
import TestRigs
import XCTest

/// The server's `enabled_metrics` (docs/upload.md#the-servers-stream-switches): samples of
/// other metrics are not captured, and counted (status shows the count), never silently.
final class HealthServerMetricsTests: XCTestCase {
    func testSamplesOfMetricsTheServerDidNotEnableAreCountedNotCaptured() throws {
        let bed = try HealthTestBed()
        let path = bed.file("mixed.jsonl")
        let base = Date().addingTimeInterval(-600)
        let lines = (0..<6).map { i -> String in
            let time = RFC3339.string(from: base.addingTimeInterval(Double(i)))
            return i.isMultiple(of: 2)
                ? #"{"timestamp":"\#(time)","metric_type":"heart_rate","value":\#(60 + i)}"#
                : #"{"timestamp":"\#(time)","metric_type":"steps","value":\#(i)}"#
        }.joined(separator: "\n") + "\n"
        try FileManager.default.append(lines, to: path)
        let stream = bed.stream(file: path, serverMetrics: ["heart_rate"])
        stream.start()
        defer { stream.stop() }
        try bed.waitForCount(3)
        try waitUntil("every line read") { stream.statuses()[0].linesRead == 6 }
        stream.stop()
        XCTAssertEqual(try bed.payloads().map { $0["metric_type"] as? String }, ["heart_rate", "heart_rate", "heart_rate"])
        XCTAssertEqual(stream.statuses()[0].serverSkippedSamples, 3)
        XCTAssertEqual(stream.counters()[StreamCounter.serverSkippedSamples], 3)
        XCTAssertEqual(stream.statuses()[0].rejectedSamples, 0, "not refused: switched off")
    }

    func testWithoutTheServersListEveryMetricIsCaptured() throws {
        let bed = try HealthTestBed()
        let path = bed.file("steps.jsonl")
        try FileManager.default.append(SampleLines.jsonl(0..<4), to: path)
        let stream = bed.stream(file: path)
        stream.start()
        defer { stream.stop() }
        try bed.waitForCount(4)
        stream.stop()
        XCTAssertEqual(stream.statuses()[0].serverSkippedSamples, 0)
    }
}
