import AgentCore
import Daemon
import Foundation
import Logging
import Platform
import Reports
import TestRigs
import XCTest

/// The daemon's quiet hours in process, on a `VirtualScheduler` and in Europe/Berlin
/// (docs/development.md, Driving time in a test): the microphone stops at the quiet span's
/// start and starts at its end on the pause-end timer, across midnight and across both
/// daylight-saving changes of 2026; a timed pause still holds on top; `status` says the
/// next change; paired with a Virtues box, the span ended is a muted-span record in the
/// queue. Both sides of each boundary are asserted.
final class QuietHoursDaemonTests: XCTestCase {
    typealias Rig = VirtualTimeDaemonTests.Rig
    let berlin = TimeZone(identifier: "Europe/Berlin")!

    static let boxKeys = """
        [box]
        node_id = "\(String(repeating: "ab", count: 32))"
        applet_id = "applet-1"
        key = "\(String(repeating: "cd", count: 32))"
        """

    func utc(_ text: String) throws -> Date { try XCTUnwrap(RFC3339.date(from: text), text) }

    func daemon(_ rig: Rig) -> AgentDaemon {
        AgentDaemon(config: rig.config, database: rig.database,
                    factory: VirtualTimeDaemonTests.VirtualComponents(counts: rig.counts, scheduler: rig.scheduler),
                    clock: rig.scheduler, scheduler: rig.scheduler, roundInterval: 3_600, timeZone: berlin,
                    trimsMemory: false, logger: Logger(label: "test"))
    }

    func status(_ rig: Rig) -> StatusReport {
        StatusReader(clock: rig.scheduler, timeZone: berlin).read(config: rig.config, configFile: rig.config.file)
    }

    func microphone(_ report: StatusReport) throws -> StatusReport.Stream {
        try XCTUnwrap(report.streams.first { $0.name == "microphone" })
    }

    /// Advances to `moment` less `margin`, asserts `before`, then past it, asserts `after`.
    func cross(_ rig: Rig, _ moment: Date, running: Bool, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        rig.scheduler.advance(by: moment.timeIntervalSince(rig.scheduler.now()) - 0.1)
        XCTAssertEqual(rig.counts.running(.microphone), !running, "not yet \(what)", file: file, line: line)
        rig.scheduler.advance(by: 0.2)
        XCTAssertEqual(rig.counts.running(.microphone), running, what, file: file, line: line)
    }

    func markers(_ rig: Rig) throws -> [[String: Any]] {
        try rig.database.recordQueue.records(stream: .microphone).compactMap {
            try JSONSerialization.jsonObject(with: $0.payload) as? [String: Any]
        }
    }

    /// Saturday 28 March 2026, daily 22:00 to 07:00: the night the clocks go forward is
    /// eight hours long, from 22:00 CET (21:00Z) to 07:00 CEST (05:00Z).
    func testTheMicrophoneStopsAtTenAndStartsAtSevenAcrossSpringForward() throws {
        // The clock believed as set: a span timed from a clock that is not is not written.
        let rig = try Rig("quiet-spring", streams: [.microphone],
                          toml: "[daemon]\ntrust_system_clock = true\n[[microphone.quiet]]\nfrom = \"22:00\"\nto = \"07:00\"\n" + Self.boxKeys)
        rig.scheduler.setWallClock(to: try utc("2026-03-28T20:59:00Z"))
        let daemon = daemon(rig)
        daemon.start()
        XCTAssertTrue(rig.counts.running(.microphone))
        var mic = try microphone(status(rig))
        XCTAssertEqual(mic.quietFrom, try utc("2026-03-28T21:00:00Z"), "status: quiet hours from 22:00")
        XCTAssertNil(mic.mutedBy)
        XCTAssertTrue(StatusText(colour: false, now: rig.scheduler.now(), timeZone: berlin).render(status(rig)).contains("microphone: quiet hours from 22:00"))

        cross(rig, try utc("2026-03-28T21:00:00Z"), running: false, "stopped at 22:00 CET")
        mic = try microphone(status(rig))
        XCTAssertEqual(mic.mutedBy, "schedule")
        XCTAssertEqual(mic.quietUntil, try utc("2026-03-29T05:00:00Z"), "status: quiet until 07:00 CEST")
        XCTAssertEqual(mic.liveness, "paused")
        let text = StatusText(colour: false, now: rig.scheduler.now(), timeZone: berlin).render(status(rig))
        XCTAssertTrue(text.contains("microphone: quiet until 07:00"), text)
        try StatusSchema.assertMatches(try status(rig).json())

        cross(rig, try utc("2026-03-29T05:00:00Z"), running: true, "started at 07:00 CEST, eight hours later")
        XCTAssertEqual(rig.counts.starts(.microphone), 2, "one stop and one start for the night, nothing between")
        XCTAssertEqual(try microphone(status(rig)).quietFrom, try utc("2026-03-29T20:00:00Z"), "next: 22:00 CEST")

        // Paired with a box: the night is one muted-span record, without audio or level.
        let spans = try markers(rig)
        XCTAssertEqual(spans.count, 1)
        let span = try XCTUnwrap(spans.first)
        XCTAssertEqual(span["muted_by"] as? String, "schedule")
        XCTAssertEqual(span["is_silent"] as? Bool, true)
        XCTAssertEqual(RFC3339.date(from: span["timestamp_start"] as? String ?? ""), try utc("2026-03-28T21:00:00Z"))
        XCTAssertEqual(RFC3339.date(from: span["timestamp_end"] as? String ?? ""), try utc("2026-03-29T05:00:00Z"))
        XCTAssertEqual((span["duration_seconds"] as? NSNumber)?.doubleValue ?? 0, 8 * 3_600, accuracy: 0.001)
        XCTAssertNil(span["audio_data"])
        XCTAssertNil(span["average_db_level"])
        daemon.stop()
    }

    /// Saturday 24 October 2026: the night the clocks go back is ten hours long, 22:00 CEST
    /// (20:00Z) to 07:00 CET (06:00Z). A timed pause to 07:30 holds on top of its end; the
    /// older servers (no box) get no record of the span.
    func testAcrossFallBackAndUnderATimedPause() throws {
        let rig = try Rig("quiet-fall", streams: [.microphone], toml: "[[microphone.quiet]]\nfrom = \"22:00\"\nto = \"07:00\"\n")
        rig.scheduler.setWallClock(to: try utc("2026-10-24T19:59:00Z"))
        let daemon = daemon(rig)
        daemon.start()
        cross(rig, try utc("2026-10-24T20:00:00Z"), running: false, "stopped at 22:00 CEST")
        rig.scheduler.advance(by: 4 * 3_600)
        XCTAssertFalse(rig.counts.running(.microphone), "still quiet across the change at 03:00 CEST")
        XCTAssertEqual(try microphone(status(rig)).quietUntil, try utc("2026-10-25T06:00:00Z"), "until 07:00 CET")

        // `pause microphone --until 07:30` at 06:50 CET.
        rig.scheduler.advance(by: try utc("2026-10-25T05:50:00Z").timeIntervalSince(rig.scheduler.now()))
        try PauseSwitches(database: rig.database).pause([.microphone], until: try utc("2026-10-25T06:30:00Z"), at: rig.scheduler.now())
        daemon.applyPauseSwitches()
        rig.scheduler.advance(by: try utc("2026-10-25T06:00:00Z").timeIntervalSince(rig.scheduler.now()) + 0.1)
        XCTAssertFalse(rig.counts.running(.microphone), "the quiet hours ended, the pause holds")
        cross(rig, try utc("2026-10-25T06:30:00Z"), running: true, "started when the pause ended")
        XCTAssertEqual(try markers(rig).count, 0, "no box: the span is not written")
        daemon.stop()
    }

    /// Started inside quiet hours: the microphone does not start at all until they end.
    func testADaemonStartedInQuietHoursDoesNotCapture() throws {
        let rig = try Rig("quiet-start", streams: [.microphone, .location],
                          toml: "[[microphone.quiet]]\ndays = \"mon-fri\"\nfrom = \"22:00\"\nto = \"07:00\"\n")
        // Friday 27 November 2026, 23:30 CET.
        rig.scheduler.setWallClock(to: try utc("2026-11-27T22:30:00Z"))
        let daemon = daemon(rig)
        daemon.start()
        XCTAssertFalse(rig.counts.running(.microphone))
        XCTAssertEqual(rig.counts.starts(.microphone), 0)
        XCTAssertTrue(rig.counts.running(.location), "location is not held")
        cross(rig, try utc("2026-11-28T06:00:00Z"), running: true, "started at 07:00 Saturday")
        XCTAssertEqual(try microphone(status(rig)).quietFrom, try utc("2026-11-30T21:00:00Z"), "next: Monday 22:00")
        daemon.stop()
    }
}
