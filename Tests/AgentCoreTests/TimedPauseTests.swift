import AgentCore
import Foundation
import TestRigs
import XCTest

/// Timed pauses in the queue (the end is a wall-clock time) and the user's ways of
/// writing an end (`--for`, `--until`).
final class TimedPauseTests: XCTestCase {
    func testATimedPauseReadsAsOverOnceItsEndHasPassedAndIsClearedThen() throws {
        let dir = try TemporaryDirectory("timed-pause")
        let database = try AgentDatabase(path: dir.file("agent.sqlite"))
        let switches = PauseSwitches(database: database)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        try switches.pause([.microphone], until: start.addingTimeInterval(60), at: start)
        try switches.pause([.location], at: start)

        XCTAssertEqual(try switches.pausedStreams(at: start.addingTimeInterval(59)), [.microphone, .location])
        XCTAssertEqual(try switches.pausedUntil(.microphone, at: start), start.addingTimeInterval(60))
        XCTAssertNil(try switches.pausedUntil(.location, at: start), "an open pause has no end")
        XCTAssertEqual(try switches.nextEnd(after: start), start.addingTimeInterval(60))
        // At the end (a restart or a suspend in between changes nothing: it is a time).
        XCTAssertEqual(try switches.pausedStreams(at: start.addingTimeInterval(60)), [.location])
        XCTAssertNil(try switches.nextEnd(after: start.addingTimeInterval(60)))
        XCTAssertEqual(try switches.clearEnded(at: start.addingTimeInterval(61)), [.microphone])
        XCTAssertEqual(try switches.clearEnded(at: start.addingTimeInterval(61)), [], "cleared once")
        XCTAssertEqual(try switches.pausedStreams(at: start), [.location], "cleared for good")
    }

    func testPausingAgainReplacesTheEndAndKeepsTheStart() throws {
        let dir = try TemporaryDirectory("timed-pause")
        let switches = PauseSwitches(database: try AgentDatabase(path: dir.file("agent.sqlite")))
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        try switches.pause([.health], until: start.addingTimeInterval(60), at: start)
        try switches.pause([.health], until: nil, at: start.addingTimeInterval(10))
        XCTAssertNil(try switches.pausedUntil(.health, at: start.addingTimeInterval(100)), "now open-ended")
        XCTAssertTrue(try switches.isPaused(.health, at: start.addingTimeInterval(100)))
        XCTAssertEqual(try switches.pausedSince(.health, at: start.addingTimeInterval(100)), start)
        // A pause after an ended one starts afresh.
        try switches.pause([.microphone], until: start.addingTimeInterval(5), at: start)
        try switches.pause([.microphone], until: start.addingTimeInterval(50), at: start.addingTimeInterval(20))
        XCTAssertEqual(try switches.pausedSince(.microphone, at: start.addingTimeInterval(20)), start.addingTimeInterval(20))
        try switches.resume([.microphone, .health])
        XCTAssertEqual(try switches.pausedStreams(at: start), [])
    }

    func testDurations() throws {
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
}
