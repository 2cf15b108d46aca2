import AgentCore
@testable import Daemon
import Foundation
import Logging
import Platform
import Synchronization
import TestRigs
import XCTest

/// What a stream made of parts writes to the coverage ledger (docs/operations.md,
/// "Coverage"): captured while one part still captures, though its liveness names the
/// part at fault; `device_missing` once none does.
final class StreamCoverageTests: XCTestCase {
    /// A health stream's shape at the seam: one source failing (a strap away), and whether
    /// another (a file) still reads.
    final class PartlyLiveStream: CaptureStream, @unchecked Sendable {
        let stream = StreamName.health
        let fileReads = Mutex(true)
        func start() {}
        func stop() {}
        func liveness() -> Liveness { .unhealthy(reason: "strap: heart-rate sensor A0:9E:1A:12:34:56 is out of reach") }
        func capturesInPart() -> Bool { fileReads.withLock { $0 } }
    }

    func testAStreamWithOneLiveSourceIsCapturedWhileItsFailingSourceStillShows() throws {
        let directory = try TemporaryDirectory("ariata-coverage-parts")
        let clock = VirtualScheduler(wallClock: Date())
        let database = try AgentDatabase(path: directory.file("agent.sqlite"), clock: clock)
        let recorder = CoverageRecorder(database: database, clock: clock, logger: Logger(label: "test"))
        let stream = PartlyLiveStream()
        let supervisor = StreamSupervisor(stream: .health, paused: nil, coverage: recorder, logger: Logger(label: "test")) { stream }
        func last() throws -> CoverageState? {
            try database.coverage.spans([.health], from: Date(timeIntervalSince1970: 0), to: clock.now().addingTimeInterval(1)).last?.state
        }
        supervisor.start()
        _ = clock.advance(by: 60)
        let liveness = supervisor.liveness()
        XCTAssertTrue(liveness.reason?.contains("strap: heart-rate sensor") == true, "the failing source still shows: \(liveness)")
        XCTAssertEqual(try last(), .captured, "one source still captures")

        stream.fileReads.withLock { $0 = false }
        _ = clock.advance(by: 60)
        _ = supervisor.liveness()
        XCTAssertEqual(try last(), .deviceMissing, "no source captures")
        supervisor.stop()
    }
}
