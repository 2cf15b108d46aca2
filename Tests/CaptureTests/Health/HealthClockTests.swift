import AgentCore
@testable import Capture
import Foundation
import Logging
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
                                            clockTrust: ClockTrust(sync: FileClockSync(path: syncFile), trustSystemClock: false))
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
}
