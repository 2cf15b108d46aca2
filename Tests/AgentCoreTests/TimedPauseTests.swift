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
}
