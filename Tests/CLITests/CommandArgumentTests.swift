import AgentCore
@testable import ariata_agent
import Foundation
import XCTest

/// The command line's value parsers: a pause's `--for` and `--until`, and the times
/// `purge --before` and `export --since/--until` take (an age has no cap there).
final class CommandArgumentTests: XCTestCase {
    func testPauseDurations() throws {
        XCTAssertEqual(try PauseEnd.duration("90s"), 90)
        XCTAssertEqual(try PauseEnd.duration("15m"), 900)
        XCTAssertEqual(try PauseEnd.duration("2h"), 7_200)
        XCTAssertEqual(try PauseEnd.duration("1h30m"), 5_400)
        XCTAssertEqual(try PauseEnd.duration("1d"), 86_400)
        XCTAssertEqual(try PauseEnd.duration("45"), 45)
        for bad in ["", "h", "1x", "-5m", "1h30", "0s", "1.5h", "400d"] {
            XCTAssertThrowsError(try PauseEnd.duration(bad), bad) { error in
                XCTAssertTrue("\(error)".contains("--for"), "\(error)")
            }
        }
    }

    func testUntilIsTheNextSuchLocalTime() throws {
        let zone = try XCTUnwrap(TimeZone(identifier: "Europe/Berlin"))
        // 2026-03-10 10:00 in Berlin (09:00 UTC).
        let morning = try XCTUnwrap(RFC3339.date(from: "2026-03-10T09:00:00.000Z"))
        XCTAssertEqual(try PauseEnd.time("18:00", after: morning, timeZone: zone), RFC3339.date(from: "2026-03-10T17:00:00.000Z"))
        XCTAssertEqual(try PauseEnd.time("07:30:15", after: morning, timeZone: zone), RFC3339.date(from: "2026-03-11T06:30:15.000Z"),
                       "passed today: tomorrow")
        XCTAssertEqual(try PauseEnd.time("10:00", after: morning, timeZone: zone), RFC3339.date(from: "2026-03-11T09:00:00.000Z"),
                       "now is not ahead")
        XCTAssertEqual(try PauseEnd.time("2026-03-10T12:00:00Z", after: morning, timeZone: zone), RFC3339.date(from: "2026-03-10T12:00:00.000Z"))
        for bad in ["25:00", "18", "18:60", "18:00:99", "six", "2026-03-10T08:00:00Z"] {
            XCTAssertThrowsError(try PauseEnd.time(bad, after: morning, timeZone: zone), bad) { error in
                XCTAssertTrue("\(error)".contains("--until"), "\(error)")
            }
        }
    }
    func testTimeArguments() throws {
        let now = try XCTUnwrap(RFC3339.date(from: "2026-03-10T09:00:00.000Z"))
        let zone = try XCTUnwrap(TimeZone(identifier: "Europe/Berlin"))
        XCTAssertEqual(try TimeArgument.parse("7d", option: "--before", now: now, timeZone: zone), now.addingTimeInterval(-7 * 86_400))
        XCTAssertEqual(try TimeArgument.parse("2026-03-01", option: "--before", now: now, timeZone: zone),
                       RFC3339.date(from: "2026-02-28T23:00:00.000Z"))
        XCTAssertEqual(try TimeArgument.parse("2026-03-01 18:30", option: "--before", now: now, timeZone: zone),
                       RFC3339.date(from: "2026-03-01T17:30:00.000Z"))
        XCTAssertEqual(try TimeArgument.parse("2026-03-01T18:30:00Z", option: "--before", now: now, timeZone: zone),
                       RFC3339.date(from: "2026-03-01T18:30:00.000Z"))
        XCTAssertThrowsError(try TimeArgument.parse("yesterday", option: "--before", now: now, timeZone: zone)) { error in
            XCTAssertTrue("\(error)".hasPrefix("--before yesterday: use"), "\(error)")
        }
    }

    /// An age reaches back as far as it says: a year's cap is the pause's alone.
    func testAnAgeHasNoCap() throws {
        let now = try XCTUnwrap(RFC3339.date(from: "2026-03-10T09:00:00.000Z"))
        XCTAssertEqual(try TimeArgument.parse("400d", option: "--since", now: now), now.addingTimeInterval(-400 * 86_400))
        XCTAssertEqual(try TimeArgument.parse("3000d", option: "--since", now: now), now.addingTimeInterval(-3_000 * 86_400))
        XCTAssertThrowsError(try PauseEnd.duration("400d"), "a pause stays at most a year")
    }
}
