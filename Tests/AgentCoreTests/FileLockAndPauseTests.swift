import AgentCore
import Foundation
import TestRigs
import XCTest

final class FileLockAndPauseTests: XCTestCase {
    func testOnlyOneHolderAtATimeAcrossProcesses() throws {
        let dir = try TemporaryDirectory("lock")
        let lock = FileLock.upload(databasePath: dir.file("agent.sqlite"))
        let held = try XCTUnwrap(lock.tryAcquire())
        XCTAssertNil(try lock.tryAcquire(), "a second holder in this process")
        XCTAssertTrue(lock.isLocked())
        // Another process (flock(1) from util-linux) is refused while we hold it...
        let other = try ChildProcess("flock", ["--nonblock", lock.path, "true"], logDirectory: dir.path)
        XCTAssertEqual(other.wait(), 1)
        held.release()
        // ...and gets it once released.
        let again = try ChildProcess("flock", ["--nonblock", lock.path, "true"], logDirectory: dir.path)
        XCTAssertEqual(again.wait(), 0)
        XCTAssertFalse(lock.isLocked())
        XCTAssertNotNil(try lock.acquire(timeout: 1))
    }

    func testPauseStateSurvivesReopening() throws {
        let dir = try TemporaryDirectory("pause")
        let path = dir.file("agent.sqlite")
        try PauseSwitches(database: AgentDatabase(path: path)).pause([.microphone, .location])
        let reopened = PauseSwitches(database: try AgentDatabase(path: path))
        XCTAssertEqual(try reopened.pausedStreams(), [.microphone, .location])
        XCTAssertNotNil(try reopened.pausedSince(.microphone))
        try reopened.resume([.location])
        XCTAssertEqual(try reopened.pausedStreams(), [.microphone])
    }
}
