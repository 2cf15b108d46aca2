import AgentCore
import Foundation
import Logging
import Platform
import TestRigs
@testable import Upload

/// A real SQLite queue in a temp dir, a real receiver on loopback, and an uploader
/// between them on a clock the test moves.
final class UploadFixture {
    let directory: TemporaryDirectory
    let database: AgentDatabase
    let receiver: ReceiverRig
    let clock: ManualClock
    var server = ServerConfig()
    var upload = UploadConfig()
    var tuning = UploadTuning()

    /// - Parameters:
    ///   - receiverRunning: false to start with the receiver down (it can be started later
    ///     on the same port).
    ///   - databasePath: where the queue lives (default: in the fixture's temp directory).
    ///   - strictReceiver: the receiver's `--strict` (the contract's checks); false plays
    ///     the real servers' leniency.
    init(receiverRunning: Bool = true, receiverArguments: [String] = [], strictReceiver: Bool = true,
         token: String = "test-token", databasePath: String? = nil) throws {
        directory = try TemporaryDirectory("ariata-upload")
        // Real time: the receiver checks record times against its own clock.
        clock = ManualClock(Date())
        database = try AgentDatabase(path: databasePath ?? directory.file("queue.sqlite"), clock: clock)
        receiver = try ReceiverRig(logDirectory: directory.path, token: token, arguments: receiverArguments,
                                   strict: strictReceiver, start: receiverRunning)
        server.endpoint = receiver.endpoint
        server.token = Secret(token)
        server.deviceID = "test-device"
        server.connectTimeout = 5
        server.requestTimeout = 20
    }

    func makeUploader(clock: (any WallClock)? = nil) -> Uploader {
        var logger = Logger(label: "ariata.upload")
        logger.logLevel = .debug
        return Uploader(server: server, upload: upload, queue: database.recordQueue, clock: clock ?? self.clock,
                        logger: logger, tuning: tuning)
    }

    /// An uploader whose timer and clock are `scheduler`'s, with no jitter (full steps).
    func makeUploader(scheduler: VirtualScheduler) -> Uploader {
        var logger = Logger(label: "ariata.upload")
        logger.logLevel = .debug
        return Uploader(server: server, upload: upload, queue: database.recordQueue, clock: scheduler, logger: logger, tuning: tuning,
                        random: { 0 }, scheduler: scheduler)
    }

    // MARK: Records

    /// Enqueues `count` valid records of `stream`; returns their ids (lowercased).
    @discardableResult
    func enqueue(_ stream: StreamName, count: Int, audioBytes: Int = 2_000) throws -> [String] {
        let records = try (0..<count).map { index in
            try TestRecords.realistic(stream, at: Date().addingTimeInterval(-Double(count - index)), audioBytes: audioBytes)
        }
        try database.recordQueue.enqueue(records, anchor: nil)
        return records.map { $0.id.uuidString.lowercased() }
    }

    /// A location record the server refuses: dated before 2000.
    static func poisonLocation() throws -> NewRecord {
        try NewRecord(stream: .location, capturedAt: Date(timeIntervalSince1970: 900_000_000),
                      fields: ["timestamp": "1998-07-09T16:00:00.000Z", "latitude": 1.0, "longitude": 2.0])
    }

    // MARK: Reading back

    func ids(_ stream: StreamName, status: RecordStatus) throws -> Set<String> {
        Set(try database.recordQueue.records(stream: stream, status: status).map { $0.id.uuidString.lowercased() })
    }

    func allRecords() throws -> [QueuedRecord] {
        try StreamName.allCases.flatMap { try database.recordQueue.records(stream: $0) }
    }
}
