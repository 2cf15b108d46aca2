import AgentCore
import Daemon
import Foundation
import Logging
import TestRigs
import XCTest

/// The daemon's part in `[storage] sync_seconds` (docs/queue.md, Durability): the window comes
/// from the configuration (and a reload), the maintenance round arms a deadline for what would
/// otherwise wait past the window before the next check, and a clean stop leaves nothing
/// waiting.
final class DaemonCommitSyncTests: XCTestCase {
    /// The uploader's seam, idle: this test is about the daemon's own syncs, and a real
    /// uploader's reads would sync too (at times of their own).
    final class IdleUploader: UploadComponent, @unchecked Sendable {
        func start() {}
        func stop() {}
        func liveness() -> Liveness { .healthy }
        func updateServer(_ server: ServerConfig, box: BoxConfig) {}
        func networkReturned(_ why: String) {}
        func cycleNow(_ why: String) {}
        func setPower(factor: Int, postponed: Bool) {}
        func setMetered(_ metered: Bool) {}
    }

    struct NoStreams: ComponentFactory {
        func makeStream(_ stream: StreamName, config: AgentConfig, database: AgentDatabase, logger: Logger) -> any CaptureStream {
            preconditionFailure("every stream is disabled in this test")
        }
        func makeUploader(config: AgentConfig, database: AgentDatabase, logger: Logger) -> any UploadComponent { IdleUploader() }
    }

    func fix() throws -> NewRecord { try TestRecords.fix(at: Date()) }

    func testTheMaintenanceRoundAndAStopSyncWhatWaitsAndAReloadSetsTheWindow() throws {
        let dir = try TemporaryDirectory("commit-sync")
        var config = try AgentConfig(toml: "[storage]\nsync_seconds = 45\n", file: dir.file("agent.toml"))
        for stream in StreamName.allCases { config.setEnabled(stream, false) }
        config.storage.database = dir.file("agent.sqlite")
        let database = try AgentDatabase(path: config.storage.database)
        let daemon = AgentDaemon(config: config, database: database, factory: NoStreams(), roundInterval: 30,
                                 trimsMemory: false, logger: Logger(label: "test"))
        XCTAssertEqual(database.commitSync.window, 45, "the window is the configuration's")
        daemon.start()

        try database.recordQueue.enqueue(fix())
        XCTAssertTrue(database.commitSync.isWaiting)
        daemon.runMaintenanceRound()
        XCTAssertTrue(database.commitSync.isWaiting, "45 s window, 30 s checks: a fix of a moment ago can wait for the next check")

        config.storage.syncSeconds = 30
        daemon.reload(config)
        XCTAssertEqual(database.commitSync.window, 30, "a reload sets the new window")
        XCTAssertFalse(database.commitSync.isWaiting, "the reload's stop synced what waited")
        try database.recordQueue.enqueue(fix())
        XCTAssertTrue(database.commitSync.isWaiting)
        daemon.runMaintenanceRound()
        XCTAssertTrue(database.commitSync.isWaiting,
                      "30 s window, 30 s checks: the check leaves a fix of a moment ago to the deadline it arms (or an earlier fsync)")

        // A window shorter than the time to the next check: the deadline the check armed
        // syncs the fix at the end of its window, with no other commit and no other check.
        config.storage.syncSeconds = 2
        daemon.reload(config)
        XCTAssertFalse(database.commitSync.isWaiting, "the reload's stop synced what waited")
        try database.recordQueue.enqueue(fix())
        daemon.runMaintenanceRound()
        XCTAssertTrue(database.commitSync.isWaiting, "2 s window: the fix is not synced at the check")
        let synced = expectation(description: "the deadline syncs the waiting fix")
        let poll = Thread {
            let end = Date().addingTimeInterval(20)
            while Date() < end {
                if !database.commitSync.isWaiting { synced.fulfill(); return }
                usleep(50_000)
            }
        }
        poll.start()
        wait(for: [synced], timeout: 25)

        try database.recordQueue.enqueue(fix())
        XCTAssertTrue(database.commitSync.isWaiting)
        daemon.stop()
        XCTAssertFalse(database.commitSync.isWaiting, "a clean stop leaves nothing waiting")
        XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .pending), 4)
    }
}
