import AgentCore
import Foundation
import XCTest

/// `[[microphone.quiet]]`: reading the blocks, and the schedule in a real time zone
/// (Europe/Berlin from the system's zone database) across midnight, the week's ends and
/// both daylight-saving changes of 2026 (29 March, 25 October).
final class QuietHoursTests: XCTestCase {
    let berlin = TimeZone(identifier: "Europe/Berlin")!

    func utc(_ text: String) throws -> Date { try XCTUnwrap(RFC3339.date(from: text), text) }

    func schedule(_ toml: String) throws -> QuietSchedule {
        let config = try AgentConfig(toml: toml, file: "agent.toml")
        return QuietSchedule(config.microphone.quiet, timeZone: berlin)
    }

    func testWeekdayNightsCrossMidnightAndStartOnTheListedDaysOnly() throws {
        let nights = try schedule("[[microphone.quiet]]\ndays = \"mon-fri\"\nfrom = \"22:00\"\nto = \"07:00\"\n")
        // Monday 2026-11-23, CET (UTC+1): 21:59:59 local is 20:59:59Z.
        var phase = nights.phase(at: try utc("2026-11-23T20:59:59Z"))
        XCTAssertFalse(phase.quiet)
        XCTAssertEqual(phase.changesAt, try utc("2026-11-23T21:00:00Z"), "quiet hours from 22:00 Monday")
        phase = nights.phase(at: try utc("2026-11-23T21:00:00Z"))
        XCTAssertTrue(phase.quiet, "22:00 itself is quiet")
        XCTAssertEqual(phase.since, try utc("2026-11-23T21:00:00Z"))
        XCTAssertEqual(phase.changesAt, try utc("2026-11-24T06:00:00Z"), "until 07:00 Tuesday: across midnight")
        XCTAssertFalse(nights.phase(at: try utc("2026-11-24T06:00:00Z")).quiet, "07:00 itself is not")
        // Friday night ends Saturday morning; Saturday and Sunday nights are not quiet.
        phase = nights.phase(at: try utc("2026-11-28T05:00:00Z"))
        XCTAssertTrue(phase.quiet, "Saturday 06:00 is still Friday's night")
        XCTAssertEqual(phase.changesAt, try utc("2026-11-28T06:00:00Z"))
        phase = nights.phase(at: try utc("2026-11-28T22:00:00Z"))
        XCTAssertFalse(phase.quiet, "Saturday 23:00")
        XCTAssertEqual(phase.changesAt, try utc("2026-11-30T21:00:00Z"), "next: Monday 22:00")
    }

    func testBlocksThatMeetOrOverlapAreOneSpan() throws {
        let two = try schedule("""
            [[microphone.quiet]]
            from = "22:00"
            to = "00:00"
            [[microphone.quiet]]
            from = "00:00"
            to = "06:30"
            [[microphone.quiet]]
            days = "sat,sun"
            from = "06:00"
            to = "09:00"
            """)
        // Saturday 2026-11-28 23:00 local: one span to Sunday 09:00.
        let phase = two.phase(at: try utc("2026-11-28T22:00:00Z"))
        XCTAssertTrue(phase.quiet)
        XCTAssertEqual(phase.changesAt, try utc("2026-11-29T08:00:00Z"))
        XCTAssertEqual(phase.since, try utc("2026-11-28T21:00:00Z"))
    }

    /// 29 March 2026: 02:00 CET becomes 03:00 CEST (01:00Z). A night across it is an hour
    /// shorter; a time the clocks skip happens when they jump past it.
    func testSpringForwardShortensTheNightAndASkippedTimeHappensAtTheJump() throws {
        let nights = try schedule("[[microphone.quiet]]\nfrom = \"22:00\"\nto = \"07:00\"\n")
        let phase = nights.phase(at: try utc("2026-03-28T23:00:00Z"))
        XCTAssertTrue(phase.quiet)
        XCTAssertEqual(phase.since, try utc("2026-03-28T21:00:00Z"), "22:00 CET")
        XCTAssertEqual(phase.changesAt, try utc("2026-03-29T05:00:00Z"), "07:00 CEST: 8 hours, not 9")

        let skipped = try schedule("[[microphone.quiet]]\nfrom = \"02:30\"\nto = \"03:30\"\n")
        let before = skipped.phase(at: try utc("2026-03-29T00:59:59Z"))
        XCTAssertFalse(before.quiet)
        XCTAssertEqual(before.changesAt, try utc("2026-03-29T01:00:00Z"), "02:30 does not exist: quiet from the jump (03:00 CEST)")
        let inside = skipped.phase(at: try utc("2026-03-29T01:00:00Z"))
        XCTAssertTrue(inside.quiet)
        XCTAssertEqual(inside.changesAt, try utc("2026-03-29T01:30:00Z"), "until 03:30 CEST")

        let wholly = try schedule("[[microphone.quiet]]\nfrom = \"02:10\"\nto = \"02:50\"\n")
        let day = wholly.phase(at: try utc("2026-03-29T00:00:00Z"))
        XCTAssertFalse(day.quiet)
        XCTAssertEqual(day.changesAt, try utc("2026-03-30T00:10:00Z"), "a block inside the skipped hour does not happen that day")
    }

    /// 25 October 2026: 03:00 CEST becomes 02:00 CET (01:00Z). A night across it is an hour
    /// longer; a time the clocks repeat happens the first time.
    func testFallBackLengthensTheNightAndARepeatedTimeHappensTheFirstTime() throws {
        let nights = try schedule("[[microphone.quiet]]\nfrom = \"22:00\"\nto = \"07:00\"\n")
        let phase = nights.phase(at: try utc("2026-10-24T23:00:00Z"))
        XCTAssertTrue(phase.quiet)
        XCTAssertEqual(phase.since, try utc("2026-10-24T20:00:00Z"), "22:00 CEST")
        XCTAssertEqual(phase.changesAt, try utc("2026-10-25T06:00:00Z"), "07:00 CET: 10 hours")

        let repeated = try schedule("[[microphone.quiet]]\nfrom = \"02:30\"\nto = \"02:45\"\n")
        let first = repeated.phase(at: try utc("2026-10-25T00:30:00Z"))
        XCTAssertTrue(first.quiet, "the first 02:30 (CEST)")
        XCTAssertEqual(first.changesAt, try utc("2026-10-25T00:45:00Z"))
        let second = repeated.phase(at: try utc("2026-10-25T01:30:00Z"))
        XCTAssertFalse(second.quiet, "the second 02:30 (CET) is not quiet again")
        XCTAssertEqual(second.changesAt, try utc("2026-10-26T01:30:00Z"), "next: Monday 02:30 CET")
    }

    func testDaysAndTimesAreReadAsWrittenAndWrittenBack() throws {
        XCTAssertEqual(Weekdays("fri-mon")?.days, [5, 6, 7, 1], "a range may wrap past Sunday")
        XCTAssertEqual(Weekdays("Mon, wed-fri")?.days, [1, 3, 4, 5])
        XCTAssertEqual(Weekdays("saturday,sunday")?.days, [6, 7])
        XCTAssertEqual(Weekdays("daily")?.days.count, 7)
        XCTAssertNil(Weekdays("weekdays"))
        XCTAssertNil(Weekdays("mo-fr"))
        XCTAssertEqual(TimeOfDay("7:05")?.description, "07:05")
        XCTAssertNil(TimeOfDay("24:00"))
        XCTAssertNil(TimeOfDay("7"))
        XCTAssertNil(TimeOfDay("07:5"))

        let config = try AgentConfig(toml: "[[microphone.quiet]]\ndays = \"sat,sun\"\nfrom = \"13:00\"\nto = \"15:00\"\n[[microphone.quiet]]\nfrom = \"23:00\"\nto = \"06:00\"\n",
                                     file: "a.toml")
        let written = ConfigWriter.render(config)
        XCTAssertTrue(written.contains("days = 'sat,sun'"), written)
        XCTAssertFalse(written.contains("daily"), "every day is the default, not written")
        XCTAssertEqual(try AgentConfig(toml: written, file: "b.toml").microphone.quiet, config.microphone.quiet)
    }

    func testBadValuesSayWhatToWrite() {
        let cases: [(toml: String, key: String, fragment: String)] = [
            ("[[microphone.quiet]]\ndays = \"weekdays\"\nfrom = \"22:00\"\nto = \"07:00\"", "microphone.quiet[1].days", "write days as \"mon-fri\""),
            ("[[microphone.quiet]]\nfrom = \"10pm\"\nto = \"07:00\"", "microphone.quiet[1].from", "write a local time as \"HH:MM\""),
            ("[[microphone.quiet]]\nfrom = \"22:00\"\nto = \"24:00\"", "microphone.quiet[1].to", "midnight is \"00:00\""),
            ("[[microphone.quiet]]\nto = \"07:00\"", "microphone.quiet[1].from", "missing: give a local time"),
            ("[[microphone.quiet]]\nfrom = 22\nto = \"07:00\"", "microphone.quiet[1].from", "expected a string in quotes"),
            ("[[microphone.quiet]]\nfrom = \"22:00\"\nto = \"07:00\"\nuntil = \"08:00\"", "microphone.quiet[1].until", "unknown key; keys allowed here: days, from, to"),
            ("[microphone]\nmuted_place_fix_age = 10", "microphone.muted_place_fix_age", "10 is out of range: allowed 60 to 86400 seconds"),
            ("[[location.exclude]]\nlatitude = 1\nlongitude = 2\nradius = 100\nmicrophone = \"off\"", "location.exclude[1].microphone",
             "use one of \"capture\", \"mute\""),
        ]
        for c in cases {
            XCTAssertThrowsError(try AgentConfig(toml: c.toml, file: "agent.toml"), c.toml) { error in
                let text = "\(error)"
                XCTAssertTrue(text.contains(c.key), "\(text) names \(c.key)")
                XCTAssertTrue(text.contains(c.fragment), "\(text) says \(c.fragment)")
            }
        }
    }

    func testAZoneMutesOnlyWhenItSaysSo() throws {
        let config = try AgentConfig(toml: """
            [[location.exclude]]
            latitude = 1
            longitude = 2
            radius = 100
            microphone = "mute"
            [[location.exclude]]
            latitude = 3
            longitude = 4
            radius = 100
            """, file: "a.toml")
        XCTAssertEqual(config.location.exclude.map(\.microphone), [.mute, .capture])
        let written = ConfigWriter.render(config)
        XCTAssertEqual(written.components(separatedBy: "microphone = ").count, 2, "written for the muting zone only: \(written)")
    }

    func testLocalClockTimeNamesTheDayOnlyBeyondADay() throws {
        let now = try utc("2026-11-23T12:00:00Z")
        XCTAssertEqual(LocalClockTime.string(try utc("2026-11-24T06:00:00Z"), in: berlin, now: now), "07:00")
        XCTAssertEqual(LocalClockTime.string(try utc("2026-11-30T21:00:00Z"), in: berlin, now: now), "Mon 22:00")
    }
}
