import AgentCore
import Foundation
import Logging
import TestRigs
@testable import Upload

/// A real SQLite queue in a temp dir, a real receiver on loopback, and an uploader
/// between them on a clock the test moves.
final class UploadFixture {
    let directory: TemporaryDirectory
    let queue: SQLiteQueue
    let receiver: ReceiverRig
    let clock: ManualClock
    var server = ServerConfig()
    var upload = UploadConfig()
    var policy = UploadPolicy()

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
        queue = try SQLiteQueue(path: databasePath ?? directory.file("queue.sqlite"), clock: clock)
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
        return Uploader(server: server, upload: upload, store: queue, clock: clock ?? self.clock,
                        logger: logger, policy: policy)
    }

    /// An uploader whose timer and clock are `scheduler`'s, with no jitter (full steps).
    func makeUploader(scheduler: VirtualScheduler) -> Uploader {
        var logger = Logger(label: "ariata.upload")
        logger.logLevel = .debug
        return Uploader(server: server, upload: upload, store: queue, clock: scheduler, logger: logger, policy: policy,
                        random: { 0 }, scheduler: scheduler)
    }

    // MARK: Records

    /// Enqueues `count` valid records of `stream`; returns their ids (lowercased).
    @discardableResult
    func enqueue(_ stream: StreamName, count: Int, audioBytes: Int = 2_000) throws -> [String] {
        let records = try (0..<count).map { index in
            try Self.record(stream, at: Date().addingTimeInterval(-Double(count - index)), audioBytes: audioBytes)
        }
        try queue.enqueue(records, anchor: nil)
        return records.map { $0.id.uuidString.lowercased() }
    }

    static func record(_ stream: StreamName, at time: Date, audioBytes: Int = 2_000) throws -> NewRecord {
        let stamp = RFC3339.string(from: time)
        let fields: [String: any Sendable]
        switch stream {
        case .location:
            fields = ["timestamp": stamp, "latitude": 52.52, "longitude": 13.405, "altitude": 34.0, "speed": 1.2,
                      "course": 90.0, "horizontal_accuracy": 4.5, "vertical_accuracy": 6.0, "fix_mode": 3,
                      "satellites_used": 8]
        case .microphone:
            fields = ["timestamp_start": RFC3339.string(from: time.addingTimeInterval(-30)), "timestamp_end": stamp,
                      "duration": 30.0, "overlap_duration": 2.0, "audio_data": fakeOgg(bytes: audioBytes).base64EncodedString(),
                      "audio_format": "ogg", "sample_rate": 16_000, "channels": 1, "codec": "opus", "bitrate": 16_000]
        case .health:
            fields = ["timestamp": stamp, "metric_type": "heart_rate", "value": 61, "unit": "bpm",
                      "metadata": ["source": "test-strap"]]
        }
        return try NewRecord(stream: stream, capturedAt: time, fields: fields)
    }

    /// A location record the server refuses: dated before 2000.
    static func poisonLocation() throws -> NewRecord {
        try NewRecord(stream: .location, capturedAt: Date(timeIntervalSince1970: 900_000_000),
                      fields: ["timestamp": "1998-07-09T16:00:00.000Z", "latitude": 1.0, "longitude": 2.0])
    }

    /// Bytes that start like an Ogg page (the receiver checks the magic), then noise.
    static func fakeOgg(bytes: Int) -> Data {
        var data = Data("OggS".utf8)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        while data.count < bytes {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            data.append(UInt8(truncatingIfNeeded: state >> 33))
        }
        return data
    }

    // MARK: Reading back

    func ids(_ stream: StreamName, status: RecordStatus) throws -> Set<String> {
        Set(try queue.records(stream: stream, status: status).map { $0.id.uuidString.lowercased() })
    }

    func allRecords() throws -> [QueuedRecord] {
        try StreamName.allCases.flatMap { try queue.records(stream: $0) }
    }
}
