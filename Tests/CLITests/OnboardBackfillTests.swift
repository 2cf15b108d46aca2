import AgentCore
import Foundation
import TestRigs
import XCTest

/// Onboarding's step 4: the health file's last days imported into the real queue with a
/// progress bar, through the daemon's own file source (so a second run imports nothing).
final class OnboardBackfillTests: XCTestCase {
    func testTheLastSevenDaysOfAHealthFileAreImportedOnceWithAProgressBar() throws {
        let dir = try TemporaryDirectory("onboard-backfill")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: "bf-token")
        defer { receiver.stop() }
        let samples = dir.file("watch.jsonl")
        let recent = Date().addingTimeInterval(-2 * 86_400)
        let old = Date().addingTimeInterval(-10 * 86_400)
        var lines = (0..<100).map { i in
            #"{"timestamp":"\#(RFC3339.string(from: old.addingTimeInterval(Double(i))))","metric_type":"steps","value":\#(i)}"#
        }
        lines += (0..<1_500).map { i in
            #"{"timestamp":"\#(RFC3339.string(from: recent.addingTimeInterval(Double(i) * 60)))","metric_type":"heart_rate","value":\#(60 + i % 40)}"#
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: samples, atomically: true, encoding: .utf8)
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: AgentCLI.healthOnly(source: """
            kind = "file"
            path = "\(samples)"
            format = "jsonl"
            name = "watch"
            """))

        let first = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token", "bf-token", "--yes"])
        XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
        XCTAssertTrue(first.stdout.contains("ok    health file \(samples): readable"), first.stdout)
        XCTAssertTrue(first.stdout.contains("importing the last 7 days of watch (--yes)"), first.stdout)
        // Not a terminal: the bar is printed once, finished.
        let bar = try XCTUnwrap(first.stdout.split(separator: "\n").first { $0.hasPrefix("health ") }, first.stdout)
        XCTAssertTrue(bar.contains("100%") && bar.contains("1,500 samples"), String(bar))
        XCTAssertTrue(first.stdout.contains("ok    watch: imported 1,500 samples"), first.stdout)

        let database = try AgentDatabase(path: dir.file("agent.sqlite"))
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .pending), 1_500, "10-day-old samples stay out")

        let second = try cli.run(["onboard", "--yes"])
        XCTAssertEqual(second.status, 0, second.stdout + second.stderr)
        XCTAssertTrue(second.stdout.contains("ok    watch: imported 0 samples"), second.stdout)
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .pending), 1_500, "nothing imported twice")
    }

    func testAHealthStreamThatIsOffIsSkipped() throws {
        let dir = try TemporaryDirectory("onboard-nohealth")
        let receiver = try ReceiverRig(logDirectory: dir.path, token: "bf-token")
        defer { receiver.stop() }
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: "[location]\nenabled = false\n[microphone]\nenabled = false")
        let result = try cli.run(["onboard", "--endpoint", receiver.endpoint, "--token", "bf-token", "--yes"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("4/5 Health backfill\n  health is off: nothing to import\n"), result.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("agent.sqlite")), "no queue is made for nothing")
    }
}
