import AgentCore
@testable import Capture
import Foundation
import Logging
import Platform
import TestRigs
import XCTest

/// Health samples while the system clock cannot be believed: a sample's own time is kept
/// and not compared with the wrong clock; a sample dated from the clock is held with its
/// place on the boot clock.
final class HealthClockTests: XCTestCase {
    let trueNow = Date(timeIntervalSince1970: 1_800_000_000)
    /// What fake-hwclock restored: three days behind.
    var wrongNow: Date { trueNow.addingTimeInterval(-3 * 86_400) }

    func testOwnTimesAreNotComparedWithAClockThatCannotBeBelieved() {
        let normaliser = HealthNormaliser()
        let sample = RawHealthSample(metric: .heartRate, value: .number(70), timestamp: trueNow)
        guard case .rejected = normaliser.normalise(sample, now: wrongNow, clockTrusted: true) else {
            return XCTFail("a believed clock three days behind refuses the true time as ahead")
        }
        XCTAssertEqual(normaliser.normalise(sample, now: wrongNow, clockTrusted: false),
                       .accepted(HealthSample(metric: .heartRate, value: 70, timestamp: trueNow)))
        let old = RawHealthSample(metric: .heartRate, value: .number(70), timestamp: Date(timeIntervalSince1970: 900_000_000))
        guard case .rejected = normaliser.normalise(old, now: wrongNow, clockTrusted: false) else {
            return XCTFail("before 2000 is wrong whatever the clock says")
        }
    }

    func testASampleDatedFromAnUnbelievedClockIsHeldOnTheBootClock() throws {
        let directory = try TemporaryDirectory("ariata-health-clock")
        let syncFile = directory.file("clock-sync")
        try "unsynchronised".write(toFile: syncFile, atomically: true, encoding: .utf8)
        let counters = HealthSourceCounters(name: "t", kind: .file)
        var processor = HealthLineProcessor(format: .jsonl, sourceName: "t", counters: counters, logger: Logger(label: "t"),
                                            clockTrust: ClockTrust(sync: FileClockSync(path: syncFile), trustSystemClock: false,
                                                                   evidence: TimeEvidence()))
        var records: [NewRecord] = []
        let before = try XCTUnwrap(BootClock.now())
        processor.process(#"{"hr":70}"#, place: "t:1", now: wrongNow, into: &records)
        processor.process(#"{"timestamp":"2027-01-15T08:00:00Z","hr":71}"#, place: "t:2", now: wrongNow, into: &records)
        let after = try XCTUnwrap(BootClock.now())
        XCTAssertEqual(records.count, 2)
        let held = try XCTUnwrap(records.first?.provisional, "dated from the clock: held")
        XCTAssertEqual(held.bootID, before.bootID)
        XCTAssertGreaterThanOrEqual(held.bootTime, before.seconds)
        XCTAssertLessThanOrEqual(held.bootTime, after.seconds)
        XCTAssertEqual(records.first?.capturedAt, wrongNow)
        XCTAssertNil(records.last?.provisional, "its own time: sent as it is")
    }

    /// Under a clock that cannot be believed, this boot's evidence (a gpsd 3D fix) tells
    /// the true time: a sample's own time more than 5 minutes ahead of it is refused as
    /// under a believed clock; a sample dated from the clock is not checked (it is held).
    func testOwnTimesAreCheckedAgainstTheTrueTimeFromThisBootsEvidence() {
        let normaliser = HealthNormaliser()
        func sample(_ time: Date?) -> RawHealthSample { RawHealthSample(metric: .heartRate, value: .number(70), timestamp: time) }
        let ahead = trueNow.addingTimeInterval(CaptureTimeRule.maxAhead + 60)
        guard case .rejected(let reason) = normaliser.normalise(sample(ahead), now: wrongNow, clockTrusted: false, trueNow: trueNow) else {
            return XCTFail("more than 5 minutes ahead of the true time: the server would refuse it")
        }
        XCTAssertTrue(reason.contains("true time"), reason)
        let inside = trueNow.addingTimeInterval(CaptureTimeRule.maxAhead - 60)
        XCTAssertEqual(normaliser.normalise(sample(inside), now: wrongNow, clockTrusted: false, trueNow: trueNow),
                       .accepted(HealthSample(metric: .heartRate, value: 70, timestamp: inside)))
        XCTAssertEqual(normaliser.normalise(sample(nil), now: wrongNow, clockTrusted: false, trueNow: trueNow),
                       .accepted(HealthSample(metric: .heartRate, value: 70, timestamp: wrongNow)),
                       "dated from the clock: held and checked once corrected, not compared with the true time")
        guard case .rejected = normaliser.normalise(sample(Date(timeIntervalSince1970: 900_000_000)), now: wrongNow,
                                                    clockTrusted: false, trueNow: trueNow) else {
            return XCTFail("before 2000 is wrong whatever the evidence says")
        }
        XCTAssertEqual(normaliser.normalise(sample(ahead), now: wrongNow, clockTrusted: false),
                       .accepted(HealthSample(metric: .heartRate, value: 70, timestamp: ahead)),
                       "without evidence nothing tells what is ahead")
    }

    /// A file read by the real health stream into a real queue, the clock not believed:
    /// with this boot's evidence, lines dated in the future are refused at capture and
    /// counted with the refused samples; without it, they are queued as before.
    func testFutureDatedLinesAreRefusedAtCaptureOnlyWithThisBootsEvidence() throws {
        let trueTime = Date()
        let lines = [
            #"{"timestamp":"\#(RFC3339.string(from: trueTime.addingTimeInterval(3_600)))","hr":61}"#,
            #"{"timestamp":"\#(RFC3339.string(from: trueTime.addingTimeInterval(-60)))","hr":62}"#,
            #"{"hr":63}"#,
            #"{"timestamp":"\#(RFC3339.string(from: trueTime.addingTimeInterval(86_400)))","hr":64}"#,
        ].map { $0 + "\n" }.joined()

        func run(evidence: TimeEvidence) throws -> (values: [Int], refused: Int, held: Int) {
            let bed = try HealthTestBed()
            let syncFile = bed.file("clock-sync")
            try "unsynchronised".write(toFile: syncFile, atomically: true, encoding: .utf8)
            let path = bed.file("hr.jsonl")
            try FileManager.default.append(lines, to: path)
            var config = HealthConfig()
            config.enabled = true
            config.commitInterval = 1
            config.sources = [HealthTestBed.lineSource(.file, path: path)]
            let stream = HealthStream(config: config, database: bed.database,
                                      clockTrust: ClockTrust(sync: FileClockSync(path: syncFile), trustSystemClock: false,
                                                             evidence: evidence),
                                      logger: HealthTestBed.logger)
            stream.start()
            defer { stream.stop() }
            try waitUntil("the four lines read and committed", timeout: 20) {
                let status = stream.statuses()[0]
                return try status.linesRead == 4 && bed.count() + status.rejectedSamples == 4
            }
            stream.stop()
            let values = try bed.payloads().compactMap { $0["value"] as? Int }.sorted()
            let held = try bed.database.recordQueue.heldCounts(currentBootID: BootClock.bootID).thisBoot
            return (values, stream.counters()[StreamCounter.refusedSamples] ?? -1, held)
        }

        let evidence = TimeEvidence()
        evidence.record(trueTime: trueTime, at: try XCTUnwrap(BootClock.now()), source: "gpsd 3D fix")
        let judged = try run(evidence: evidence)
        XCTAssertEqual(judged.values, [62, 63], "the lines an hour and a day ahead are not queued")
        XCTAssertEqual(judged.refused, 2, "and are counted with the refused samples")
        XCTAssertEqual(judged.held, 1, "the line without a time is held, as before")

        let asBefore = try run(evidence: TimeEvidence())
        XCTAssertEqual(asBefore.values, [61, 62, 63, 64], "without evidence, only 'after 2000' can be checked")
        XCTAssertEqual(asBefore.refused, 0)
    }
}
