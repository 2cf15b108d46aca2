import AgentCore
@testable import Capture
import Foundation
import TestRigs
import XCTest

/// The file source on real files and a real SQLite queue: every sample exactly once, in
/// order, through pieces, rotation and restarts.
final class HealthFileSourceTests: XCTestCase {
    func testAppendInPiecesWithALineSplitAcrossTwoWrites() throws {
        let bed = try HealthTestBed()
        let path = bed.file("hr.jsonl")
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
        let stream = bed.stream(file: path)
        stream.start()
        defer { stream.stop() }
        try waitUntil("the source to open the file") { stream.liveness().isHealthy }

        let third = SampleLines.jsonl(3)
        let cut = third.index(third.startIndex, offsetBy: 25)
        try FileManager.default.append(SampleLines.jsonl(0..<3) + third[..<cut], to: path)
        try bed.waitForCount(3)
        try waitUntil("three lines read") { stream.statuses()[0].linesRead == 3 }
        XCTAssertEqual(stream.statuses()[0].malformedLines, 0, "half a line must wait, not count as bad")

        try FileManager.default.append(String(third[cut...]) + SampleLines.jsonl(4), to: path)
        try bed.waitForCount(5)
        stream.stop()
        XCTAssertEqual(try bed.values(), [0, 1, 2, 3, 4])
        XCTAssertEqual(stream.statuses()[0].malformedLines, 0)
        XCTAssertEqual(stream.statuses()[0].samplesWritten, 5)
    }

    func testRotationByRenameFinishesTheOldFileFirst() throws {
        let bed = try HealthTestBed()
        let path = bed.file("hr.jsonl")
        try FileManager.default.append(SampleLines.jsonl(0..<3), to: path)
        let stream = bed.stream(file: path)
        stream.start()
        defer { stream.stop() }
        try bed.waitForCount(3)

        // The writer still holds the renamed file and adds lines to it before reopening.
        try FileManager.default.moveItem(atPath: path, toPath: path + ".1")
        try FileManager.default.append(SampleLines.jsonl(3..<5), to: path + ".1")
        try FileManager.default.append(SampleLines.jsonl(5..<8), to: path)
        try bed.waitForCount(8)
        try FileManager.default.append(SampleLines.jsonl(8..<10), to: path)
        try bed.waitForCount(10)
        stream.stop()
        XCTAssertEqual(try bed.values(), (0..<10).map(Double.init))
    }

    func testCopytruncateStartsTheFileOver() throws {
        let bed = try HealthTestBed()
        let path = bed.file("hr.jsonl")
        try FileManager.default.append(SampleLines.jsonl(0..<4), to: path)
        let stream = bed.stream(file: path)
        stream.start()
        defer { stream.stop() }
        try bed.waitForCount(4)

        try FileManager.default.copyItem(atPath: path, toPath: path + ".1")
        XCTAssertEqual(truncate(path, 0), 0)
        try waitUntil("the truncation to be noticed") {
            stream.statuses()[0].linesRead == 4 && FileIdentity.of(path: path)?.size == 0
        }
        try FileManager.default.append(SampleLines.jsonl(4..<6), to: path)
        try bed.waitForCount(6)
        stream.stop()
        XCTAssertEqual(try bed.values(), (0..<6).map(Double.init))
    }

    /// Copytruncate while the agent is stopped, with lines it had not read yet and a new
    /// file already longer than the old offset: the fingerprint notices, the copy supplies
    /// the unread lines.
    func testCopytruncateWhileStoppedRecoversUnreadLinesFromTheCopy() throws {
        let bed = try HealthTestBed()
        let path = bed.file("hr.jsonl")
        try FileManager.default.append(SampleLines.jsonl(0..<3), to: path)
        var stream = bed.stream(file: path)
        stream.start()
        try bed.waitForCount(3)
        stream.stop()

        try FileManager.default.append(SampleLines.jsonl(3..<5), to: path)
        try FileManager.default.copyItem(atPath: path, toPath: path + ".1")
        XCTAssertEqual(truncate(path, 0), 0)
        try FileManager.default.append(SampleLines.jsonl(5..<15), to: path)

        stream = bed.stream(file: path)
        stream.start()
        defer { stream.stop() }
        try bed.waitForCount(15)
        stream.stop()
        XCTAssertEqual(try bed.values(), (0..<15).map(Double.init))
    }

    func testRotationWhileStoppedFinishesTheRotatedFile() throws {
        let bed = try HealthTestBed()
        let path = bed.file("hr.jsonl")
        try FileManager.default.append(SampleLines.jsonl(0..<2), to: path)
        var stream = bed.stream(file: path)
        stream.start()
        try bed.waitForCount(2)
        stream.stop()

        try FileManager.default.append(SampleLines.jsonl(2..<4), to: path)
        try FileManager.default.moveItem(atPath: path, toPath: path + "-20261122")
        try FileManager.default.append(SampleLines.jsonl(4..<6), to: path)
        stream = bed.stream(file: path)
        stream.start()
        defer { stream.stop() }
        try bed.waitForCount(6)
        stream.stop()
        XCTAssertEqual(try bed.values(), (0..<6).map(Double.init))
    }

    func testRestartBetweenWritesIncludingAPartialLine() throws {
        let bed = try HealthTestBed()
        let path = bed.file("hr.csv")
        try FileManager.default.append(SampleLines.csvHeader + SampleLines.csv(0..<3), to: path)
        for round in 0..<3 {
            let stream = bed.stream(file: path, format: .csv)
            stream.start()
            try bed.waitForCount(3 * (round + 1))
            // More lines, the last cut short, written while running; the rest after a stop.
            let next = SampleLines.csv((3 * (round + 1))..<(3 * (round + 2)))
            let cut = next.index(next.endIndex, offsetBy: -4)
            let wakeups = stream.statuses()[0].wakeups
            try FileManager.default.append(String(next[..<cut]), to: path)
            try waitUntil("the source to see the write") { stream.statuses()[0].wakeups > wakeups }
            stream.stop()
            try FileManager.default.append(String(next[cut...]), to: path)
        }
        let stream = bed.stream(file: path, format: .csv)
        stream.start()
        try bed.waitForCount(12)
        stream.stop()
        XCTAssertEqual(try bed.values(), (0..<12).map(Double.init), "the CSV header comes back from the anchor")
    }

    func testMalformedAndImpossibleLinesAreCountedAndSkipped() throws {
        let bed = try HealthTestBed()
        let path = bed.file("hr.jsonl")
        let time = RFC3339.string(from: Date().addingTimeInterval(-10))
        try FileManager.default.append(SampleLines.jsonl(0) + "this is not json\n" + SampleLines.jsonl(1)
            + #"{"timestamp":"\#(time)","hr":400}"# + "\n" + "\n" + SampleLines.jsonl(2)
            + #"{"timestamp":"2099-01-01T00:00:00Z","hr":60}"# + "\n", to: path)
        let stream = bed.stream(file: path)
        stream.start()
        defer { stream.stop() }
        try bed.waitForCount(3)
        try waitUntil("all lines read") { stream.statuses()[0].linesRead == 7 }
        stream.stop()
        let status = stream.statuses()[0]
        XCTAssertEqual(try bed.values(), [0, 1, 2])
        XCTAssertEqual(status.malformedLines, 1)
        XCTAssertEqual(status.rejectedSamples, 2, "HR 400 and a time in 2099")
        XCTAssertTrue(stream.liveness().isHealthy, "bad lines never stop the source")
    }

    func testFirstStartImportsTheLastDaysWithProgress() throws {
        let bed = try HealthTestBed()
        let path = bed.file("hr.jsonl")
        let now = Date()
        let ages: [Double] = [10, 8, 6.5, 1, 0.01] // days
        let text = ages.enumerated().map { i, age in
            #"{"timestamp":"\#(RFC3339.string(from: now.addingTimeInterval(-age * 86_400)))","steps":\#(i)}"# + "\n"
        }.joined()
        try FileManager.default.append(text, to: path)
        let stream = bed.stream(file: path, backfillDays: 7)
        stream.start()
        defer { stream.stop() }
        try bed.waitForCount(3)
        try waitUntil("the backfill to finish") { stream.statuses()[0].kindStatus(FileSourceStatus.self)?.backfill?.finished == true }
        // Lines written after the first start are new, whatever their time.
        try FileManager.default.append(#"{"timestamp":"\#(RFC3339.string(from: now.addingTimeInterval(-9 * 86_400)))","steps":5}"# + "\n", to: path)
        try bed.waitForCount(4)
        stream.stop()
        let status = stream.statuses()[0]
        XCTAssertEqual(try bed.values(), [2, 3, 4, 5])
        XCTAssertEqual(status.skippedOld, 2)
        let backfill = status.kindStatus(FileSourceStatus.self)?.backfill
        XCTAssertEqual(backfill?.bytesTotal, Int64(text.utf8.count))
        XCTAssertEqual(backfill?.fraction, 1)
        XCTAssertEqual(backfill?.samples, 3)
    }

    func testIdleSourceDoesNotWakeUp() throws {
        let bed = try HealthTestBed()
        let path = bed.file("hr.jsonl")
        try FileManager.default.append(SampleLines.jsonl(0..<1), to: path)
        let stream = bed.stream(file: path)
        stream.start()
        defer { stream.stop() }
        try bed.waitForCount(1)
        try waitUntil("the commit time-out to pass") { stream.statuses()[0].wakeups >= 1 }
        let before = stream.statuses()[0].wakeups
        Thread.sleep(forTimeInterval: 2.5) // longer than commit_interval: a polling loop would wake
        XCTAssertEqual(stream.statuses()[0].wakeups, before, "nothing written, so inotify has nothing to say")
        try FileManager.default.append(SampleLines.jsonl(1..<2), to: path)
        try bed.waitForCount(2)
        XCTAssertGreaterThan(stream.statuses()[0].wakeups, before)
    }

    func testWaitsForAFileThatDoesNotExistYet() throws {
        let bed = try HealthTestBed()
        let path = bed.file("later.jsonl")
        let stream = bed.stream(file: path)
        stream.start()
        defer { stream.stop() }
        try waitUntil("the source to report the missing file") { stream.liveness().reason?.contains("waiting for") == true }
        try FileManager.default.append(SampleLines.jsonl(0..<2), to: path)
        try bed.waitForCount(2)
        XCTAssertTrue(stream.liveness().isHealthy)
    }
}

/// Onboarding's foreground backfill: progress to 100 %, then the daemon's source goes on
/// from the anchor it left without importing anything twice.
final class HealthBackfillTests: XCTestCase {
    func testOnboardingBackfillReportsProgressAndTheDaemonGoesOnFromItsAnchor() throws {
        let bed = try HealthTestBed()
        let path = bed.file("export.jsonl")
        let old = #"{"timestamp":"\#(RFC3339.string(from: Date().addingTimeInterval(-30 * 86_400)))","steps":999}"# + "\n"
        try FileManager.default.append(old + SampleLines.jsonl(0..<20_000), to: path)
        var config = FileSourceSettings(path: path, format: .jsonl, name: "test-source")
        config.backfillDays = 7
        var reports: [BackfillProgress] = []
        let status = try HealthBackfill.run(config, queue: bed.database.recordQueue, logger: HealthTestBed.logger) { reports.append($0) }
        XCTAssertEqual(status.kindStatus(FileSourceStatus.self)?.caughtUp, true)
        XCTAssertEqual(status.skippedOld, 1, "older than backfill_days")
        XCTAssertEqual(reports.last?.finished, true)
        XCTAssertEqual(reports.last?.bytesTotal, FileIdentity.of(path: path)?.size)
        XCTAssertEqual(reports.last?.samples, 20_000)
        XCTAssertEqual(reports.map(\.bytesDone), reports.map(\.bytesDone).sorted(), "progress never goes back")
        XCTAssertEqual(try bed.count(), 20_000)

        try FileManager.default.append(SampleLines.jsonl(20_000..<20_002), to: path)
        let stream = bed.stream(file: path)
        stream.start()
        defer { stream.stop() }
        try bed.waitForCount(20_002)
        stream.stop()
        XCTAssertEqual(try bed.values(), (0..<20_002).map(Double.init))
    }
}
