import AgentCore
@testable import Capture
import Foundation
import Synchronization
import TestRigs
import XCTest

/// The health sources read their anchors through the queue they write to.
extension RefusingQueue: HealthRecordQueue {}

/// The committer both sources share, when the queue refuses commits: the file source
/// reads its lines again later, the serial source holds them; neither loses nor repeats
/// a sample, and neither spins while it waits to try again.
final class HealthRefusalTests: XCTestCase {
    private func stream(_ path: String, queue: any HealthRecordQueue, kind: HealthSourceKindName,
                        format: HealthLineFormat = .jsonl) -> HealthStream {
        var config = HealthConfig()
        config.enabled = true
        config.commitInterval = 1
        config.sources = [HealthTestBed.lineSource(kind, path: path, format: format)]
        return HealthStream(config: config, queue: queue, clockTrust: ClockTrust(sync: KernelClockSync(), trustSystemClock: true),
                            logger: HealthTestBed.logger)
    }

    func testAFileReadWhileTheQueueRefusesIsReadAgainOnceItTakesWrites() throws {
        let bed = try HealthTestBed()
        let path = bed.file("steps.jsonl")
        try FileManager.default.append(SampleLines.jsonl(0..<2_000), to: path)
        let refusing = RefusingQueue(bed.database)
        let stream = stream(path, queue: refusing, kind: .file)
        stream.start()
        defer { stream.stop() }
        try waitUntil("the refusal to show", timeout: 20) { stream.liveness().code == .storageFull }
        XCTAssertTrue(stream.liveness().reason?.contains("cannot write samples of \(path) to the queue") ?? false, "\(stream.liveness())")

        // Waiting to try again is a sleep, not a spin.
        let wakeups = stream.statuses()[0].wakeups
        Thread.sleep(forTimeInterval: 3)
        XCTAssertLessThan(stream.statuses()[0].wakeups - wakeups, 10)
        XCTAssertEqual(try bed.count(), 0)

        refusing.setRefusing(false)
        try FileManager.default.append(SampleLines.jsonl(2_000..<3_000), to: path)
        try bed.waitForCount(3_000)
        stream.stop()
        XCTAssertEqual(try bed.values(), (0..<3_000).map(Double.init))
        XCTAssertTrue(stream.liveness().isHealthy, "\(stream.liveness())")
        XCTAssertEqual(stream.statuses()[0].samplesWritten, 3_000)
    }

    func testSerialSamplesAreHeldWhileTheQueueRefusesAndWrittenOnce() throws {
        let bed = try HealthTestBed()
        let rig = try PtyRig(directory: bed.directory.path)
        let refusing = RefusingQueue(bed.database)
        let stream = stream(rig.b, queue: refusing, kind: .serial, format: .keyvalue)
        stream.start()
        defer { stream.stop() }
        try waitUntil("the source to open \(rig.b)") { stream.liveness().isHealthy }

        let now = Date()
        func line(_ i: Int) -> String { "ts=\(RFC3339.string(from: now.addingTimeInterval(Double(i - 100)))) steps=\(i)\n" }
        try rig.send((0..<5).map(line).joined())
        try waitUntil("the refusal to show", timeout: 20) { stream.liveness().code == .storageFull }
        let wakeups = stream.statuses()[0].wakeups
        Thread.sleep(forTimeInterval: 2)
        XCTAssertLessThan(stream.statuses()[0].wakeups - wakeups, 10, "no spin while waiting to try again")

        refusing.setRefusing(false)
        try rig.send((5..<8).map(line).joined())
        try bed.waitForCount(8, timeout: 30)
        stream.stop()
        XCTAssertEqual(try bed.values(), (0..<8).map(Double.init))
        XCTAssertTrue(stream.liveness().isHealthy, "\(stream.liveness())")
    }
}
