import AgentCore
import Foundation
import Platform
import TestRigs
import XCTest

/// The coverage ledger on a real SQLite file: a span per change, an unchanged state writes
/// nothing, a clean stop's span ends at the next start, a kill's open span ends at the
/// stream's last record and the rest up to the start is `lost`, and retention purges it.
final class CoverageLedgerTests: XCTestCase {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func spans(_ database: AgentDatabase, _ stream: StreamName = .microphone) throws -> [CoverageSpan] {
        try database.coverage.spans([stream], from: t0.addingTimeInterval(-86_400), to: t0.addingTimeInterval(10 * 86_400))
    }

    func testEachChangeIsOneSpanAndAnUnchangedStateWritesNothing() throws {
        let dir = try TemporaryDirectory("coverage-spans")
        let clock = ManualClock(t0)
        let database = try AgentDatabase(path: dir.file("agent.sqlite"), clock: clock)
        let ledger = database.coverage
        try ledger.enter(.microphone, .captured, at: t0)
        try ledger.enter(.microphone, .captured, at: t0.addingTimeInterval(60))
        try ledger.enter(.microphone, .quiet, at: t0.addingTimeInterval(3_600))
        try ledger.enter(.location, .noFix, at: t0.addingTimeInterval(100))
        clock.set(t0.addingTimeInterval(7_200))
        let mic = try spans(database)
        XCTAssertEqual(mic, [
            CoverageSpan(stream: .microphone, state: .captured, start: t0, end: t0.addingTimeInterval(3_600)),
            CoverageSpan(stream: .microphone, state: .quiet, start: t0.addingTimeInterval(3_600), end: t0.addingTimeInterval(7_200)),
        ], "the open span ends now when read")
        XCTAssertEqual(try spans(database, .location).map(\.state), [.noFix])
        XCTAssertEqual(try ledger.streams(), [.location, .microphone])
    }

    /// A kill while capturing: the open span ends at the newest record of its stream, and
    /// from there to the start is lost. A clean stop's span ends at the start, nothing lost.
    func testAKilledProcessLeavesALostGapFromItsLastRecordAndACleanStopDoesNot() throws {
        let dir = try TemporaryDirectory("coverage-kill")
        let clock = ManualClock(t0)
        let database = try AgentDatabase(path: dir.file("agent.sqlite"), clock: clock)
        try database.coverage.enter(.microphone, .captured, at: t0)
        try database.coverage.enter(.location, .captured, at: t0)
        clock.set(t0.addingTimeInterval(600))
        try database.recordQueue.enqueue(TestRecords.realistic(.microphone, at: t0.addingTimeInterval(570)))
        try database.coverage.enter(.location, .stopped, at: t0.addingTimeInterval(600))

        // The next process starts an hour later on the same file.
        clock.set(t0.addingTimeInterval(4_200))
        let reopened = try AgentDatabase(path: dir.file("agent.sqlite"), clock: clock)
        let lost = try reopened.coverage.closeAfterStart(now: clock.now())
        XCTAssertEqual(lost, [CoverageSpan(stream: .microphone, state: .lost, start: t0.addingTimeInterval(600), end: t0.addingTimeInterval(4_200))],
                       "lost from the last record's write to the start")
        XCTAssertEqual(try spans(reopened), [
            CoverageSpan(stream: .microphone, state: .captured, start: t0, end: t0.addingTimeInterval(600)),
            CoverageSpan(stream: .microphone, state: .lost, start: t0.addingTimeInterval(600), end: t0.addingTimeInterval(4_200)),
        ])
        XCTAssertEqual(try spans(reopened, .location), [
            CoverageSpan(stream: .location, state: .captured, start: t0, end: t0.addingTimeInterval(600)),
            CoverageSpan(stream: .location, state: .stopped, start: t0.addingTimeInterval(600), end: t0.addingTimeInterval(4_200)),
        ], "a clean stop is not lost")
        XCTAssertEqual(try reopened.coverage.closeAfterStart(now: clock.now()), [], "nothing is open twice")
    }

    /// A kill while capturing with no record since the span began (the power cut took the
    /// last commits): the span closes at its own start and all of it is lost.
    func testAPowerCutWithNoRecordOfTheSpanLosesAllOfIt() throws {
        let dir = try TemporaryDirectory("coverage-power")
        let clock = ManualClock(t0)
        let database = try AgentDatabase(path: dir.file("agent.sqlite"), clock: clock)
        try database.recordQueue.enqueue(TestRecords.realistic(.microphone, at: t0.addingTimeInterval(-30)))
        try database.coverage.enter(.microphone, .captured, at: t0)
        clock.set(t0.addingTimeInterval(900))
        XCTAssertEqual(try database.coverage.closeAfterStart(now: clock.now()).map(\.start), [t0])
        XCTAssertEqual(try spans(database).map(\.state), [.lost], "the whole span is lost")
    }

    func testRetentionPurgesTheLedgerWithTheRecords() throws {
        let dir = try TemporaryDirectory("coverage-retention")
        let clock = ManualClock(t0)
        let database = try AgentDatabase(path: dir.file("agent.sqlite"), clock: clock)
        try database.coverage.enter(.microphone, .captured, at: t0)
        try database.coverage.enter(.microphone, .paused, at: t0.addingTimeInterval(3_600))
        try database.coverage.enter(.microphone, .captured, at: t0.addingTimeInterval(5 * 86_400))
        clock.set(t0.addingTimeInterval(5 * 86_400 + 60))
        try database.housekeeping.applyRetention(RetentionPolicy(keepUploaded: 3 * 86_400, keepFailed: 3 * 86_400))
        XCTAssertEqual(try spans(database).map(\.state), [.paused, .captured], "the span that ended 5 days ago went")
    }
}
