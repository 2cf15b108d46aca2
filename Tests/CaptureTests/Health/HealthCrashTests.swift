import AgentCore
@testable import Capture
import Foundation
import TestRigs
import XCTest

/// SIGKILL in the middle of a large file, restart: nothing twice, nothing missing.
final class HealthCrashTests: XCTestCase {
    func testKillDuringALargeFileThenRestartGivesEachSampleOnce() throws {
        let bed = try HealthTestBed()
        let path = bed.file("big.jsonl")
        // Large enough that both kills land mid-file (asserted below) with most of it left.
        let total = 24_000
        try FileManager.default.append(SampleLines.jsonl(0..<total), to: path)
        let helper = try HealthChild.helperExecutable()
        let database = bed.database.path

        var killedAt: [Int] = []
        for threshold in [3_000, 10_000] {
            let child = try ChildProcess(helper, ["health-ingest", database, path], name: "ingest", logDirectory: bed.directory.path)
            try waitUntil("the child to ingest \(threshold) samples", timeout: 120) {
                guard child.isRunning else { throw HealthChild.ProbeFailed(output: child.stderr()) }
                return try bed.count() >= threshold
            }
            child.signal(SIGKILL)
            XCTAssertNotNil(child.wait(timeout: 10))
            killedAt.append(try bed.count())
        }
        XCTAssertLessThan(killedAt.last ?? total, total, "killed before the end, or the test proves nothing")

        let child = try ChildProcess(helper, ["health-ingest", database, path], name: "ingest", logDirectory: bed.directory.path)
        try bed.waitForCount(total, timeout: 180)
        child.stop()
        XCTAssertEqual(child.wait(timeout: 10), 0)

        let values = try bed.values()
        XCTAssertEqual(values.count, total, "no duplicates")
        XCTAssertEqual(values, (0..<total).map(Double.init), "no gaps, in order")
        let anchor = try XCTUnwrap(bed.database.recordQueue.anchor(for: "file:" + path))
        XCTAssertEqual(anchor.offset, FileIdentity.of(path: path)?.size)
        XCTAssertEqual(anchor.line, Int64(total))
    }
}
