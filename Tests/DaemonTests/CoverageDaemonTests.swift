import AgentCore
import Daemon
import Foundation
import Logging
import Platform
import Reports
import TestRigs
import XCTest

/// The daemon's coverage ledger in process, on a `VirtualScheduler` in Europe/Berlin
/// (docs/operations.md, "Coverage"): a night of quiet hours is a `quiet` span from 22:00 to
/// 07:00 between captured ones, and what `coverage` and `status` make of that day; a
/// process that ends without stopping leaves a `lost` span from its stream's last record to
/// the next start, a clean stop a `stopped` one; a pause by hand and the server's switch
/// are their own reasons.
final class CoverageDaemonTests: XCTestCase {
    typealias Rig = VirtualTimeDaemonTests.Rig
    let berlin = TimeZone(identifier: "Europe/Berlin")!

    func utc(_ text: String) throws -> Date { try XCTUnwrap(RFC3339.date(from: text), text) }

    func daemon(_ rig: Rig) -> AgentDaemon {
        AgentDaemon(config: rig.config, database: rig.database,
                    factory: VirtualTimeDaemonTests.VirtualComponents(counts: rig.counts, scheduler: rig.scheduler),
                    clock: rig.scheduler, scheduler: rig.scheduler, roundInterval: 3_600, timeZone: berlin,
                    trimsMemory: false, logger: Logger(label: "test"))
    }

    func spans(_ rig: Rig, _ stream: StreamName = .microphone) throws -> [CoverageSpan] {
        try rig.database.coverage.spans([stream], from: Date(timeIntervalSince1970: 0), to: rig.scheduler.now().addingTimeInterval(1))
    }

    func span(_ state: CoverageState, _ from: String, _ to: String, _ stream: StreamName = .microphone) throws -> CoverageSpan {
        CoverageSpan(stream: stream, state: state, start: try utc(from), end: try utc(to))
    }

    /// Saturday 28 March 2026 from 20:00 CET, quiet 22:00 to 07:00 (CEST after the change):
    /// captured, quiet, captured; then the process is killed at 09:00 right after writing a
    /// chunk, and a new one starts at 10:00: lost from 09:00 to 10:00.
    func testQuietHoursAndAKillShowInTheLedgerAndTheDaysPicture() throws {
        let rig = try Rig("coverage-quiet", streams: [.microphone], toml: "[[microphone.quiet]]\nfrom = \"22:00\"\nto = \"07:00\"\n")
        rig.scheduler.setWallClock(to: try utc("2026-03-28T19:00:00Z"))
        let first = daemon(rig)
        first.start()
        rig.scheduler.advance(by: try utc("2026-03-29T07:00:00Z").timeIntervalSince(rig.scheduler.now()))
        XCTAssertTrue(rig.counts.running(.microphone))
        XCTAssertEqual(try spans(rig), [
            try span(.captured, "2026-03-28T19:00:00Z", "2026-03-28T21:00:00Z"),
            try span(.quiet, "2026-03-28T21:00:00Z", "2026-03-29T05:00:00Z"),
            try span(.captured, "2026-03-29T05:00:00Z", "2026-03-29T07:00:00Z"),
        ], "22:00 CET to 07:00 CEST is quiet, nothing else changed")

        // A chunk written at 09:00 local (07:00Z), then killed: no stop().
        try rig.database.recordQueue.enqueue(TestRecords.realistic(.microphone, at: rig.scheduler.now().addingTimeInterval(-30)))
        rig.scheduler.setWallClock(to: try utc("2026-03-29T08:00:00Z"))
        let second = daemon(rig)
        second.start()
        XCTAssertEqual(try spans(rig).suffix(3), [
            try span(.captured, "2026-03-29T05:00:00Z", "2026-03-29T07:00:00Z"),
            try span(.lost, "2026-03-29T07:00:00Z", "2026-03-29T08:00:00Z"),
            try span(.captured, "2026-03-29T08:00:00Z", "2026-03-29T08:00:00Z"),
        ], "captured to the last chunk's write, lost to the start, captured again")

        // The day of the quiet night, as `coverage` draws it and prints it as JSON.
        let night = try CoverageDay.read(rig.database, day: try utc("2026-03-28T12:00:00Z"), streams: [.microphone],
                                         timeZone: berlin, now: rig.scheduler.now())
        let row = try XCTUnwrap(night.rows.first)
        XCTAssertEqual(row.cells.count, 96)
        XCTAssertEqual(row.cells[0], nil, "nothing known before 20:00")
        XCTAssertEqual(row.cells[80], .captured, "20:00-20:15 captured")
        XCTAssertEqual(row.cells[88], .quiet, "22:00-22:15 quiet")
        XCTAssertEqual(row.capturedShare ?? -1, 0.5, accuracy: 0.001, "two hours captured of four known")
        XCTAssertEqual(row.largestGap?.state, .quiet)
        let text = CoverageText().render(night)
        XCTAssertTrue(text.contains("microphone  " + String(repeating: " ", count: 80) + "########" + "qqqqqqqq"), text)
        XCTAssertTrue(text.contains("legend: # captured, q quiet hours"), text)
        XCTAssertTrue(text.contains("microphone: captured 50 % (2h0m of 4h0m); largest gap 22:00-00:00 quiet hours (2h0m)"), text)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: CoverageJSON(night).data()) as? [String: Any])
        XCTAssertEqual(json["day"] as? String, "2026-03-28")
        XCTAssertEqual(json["time_zone"] as? String, "Europe/Berlin")
        let stream = try XCTUnwrap((json["streams"] as? [[String: Any]])?.first)
        XCTAssertEqual(stream["captured_share"] as? Double ?? -1, 0.5, accuracy: 0.001)
        XCTAssertEqual((stream["largest_gap"] as? [String: Any])?["state"] as? String, "quiet")
        XCTAssertEqual((stream["spans"] as? [[String: Any]])?.map { $0["state"] as? String }, ["captured", "quiet"])

        // The next day in `status`: its largest gap is the kill.
        let report = StatusReader(clock: rig.scheduler, timeZone: berlin).read(config: rig.config, configFile: rig.config.file)
        let today = try XCTUnwrap(report.streams.first { $0.name == "microphone" }?.coverageToday)
        XCTAssertEqual(today.largestGap?.state, "quiet", "00:00-07:00 quiet (six hours: the clocks went forward) is longer than the hour lost")
        XCTAssertEqual(today.capturedShare, 2.0 / 9.0, accuracy: 0.001, "two hours captured of nine known")
        let statusText = StatusText(colour: false, now: rig.scheduler.now(), timeZone: berlin).render(report)
        XCTAssertTrue(statusText.contains("coverage today: microphone 22 % (largest gap 00:00-07:00 quiet hours)"), statusText)
        try StatusSchema.assertMatches(try report.json())
        second.stop()
        XCTAssertEqual(try spans(rig).last?.state, .stopped)
    }

    /// A pause by hand, the server's switch... here the pause, and a clean stop: each its
    /// own span, and the stop is not lost.
    func testAPauseAndACleanStopAreTheirOwnReasons() throws {
        let rig = try Rig("coverage-pause", streams: [.location])
        let t0 = try utc("2026-06-01T10:00:00Z")
        rig.scheduler.setWallClock(to: t0)
        let first = daemon(rig)
        first.start()
        rig.scheduler.advance(by: 600)
        try PauseSwitches(database: rig.database).pause([.location], until: nil, at: rig.scheduler.now())
        first.applyPauseSwitches()
        rig.scheduler.advance(by: 600)
        try PauseSwitches(database: rig.database).resume([.location])
        first.applyPauseSwitches()
        rig.scheduler.advance(by: 600)
        first.stop()
        rig.scheduler.setWallClock(to: t0.addingTimeInterval(3_600))
        let second = daemon(rig)
        second.start()
        XCTAssertEqual(try spans(rig, .location), [
            try span(.captured, "2026-06-01T10:00:00Z", "2026-06-01T10:10:00Z", .location),
            try span(.paused, "2026-06-01T10:10:00Z", "2026-06-01T10:20:00Z", .location),
            try span(.captured, "2026-06-01T10:20:00Z", "2026-06-01T10:30:00Z", .location),
            try span(.stopped, "2026-06-01T10:30:00Z", "2026-06-01T11:00:00Z", .location),
            try span(.captured, "2026-06-01T11:00:00Z", "2026-06-01T11:00:00Z", .location),
        ])
        second.stop()
    }
}
