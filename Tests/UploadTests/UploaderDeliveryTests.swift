import AgentCore
import Foundation
import TestRigs
import XCTest
@testable import Upload

/// Delivery against the real receiver over loopback: what arrives, how it is cut into
/// batches, and how refused batches are split.
final class UploaderDeliveryTests: XCTestCase {
    func testThreeStreamsAreDeliveredOnceWithinTheByteBound() throws {
        let f = try UploadFixture()
        f.upload.batchMaxRecords = 100
        f.upload.batchMaxBytes = 1_000_000
        let sent: [StreamName: Set<String>] = [
            .location: Set(try f.enqueue(.location, count: 250)),
            .microphone: Set(try f.enqueue(.microphone, count: 30, audioBytes: 60_000)),
            .health: Set(try f.enqueue(.health, count: 120)),
        ]
        let uploader = f.makeUploader()
        var lastProgress: [StreamName: SyncProgress] = [:]
        let report = uploader.syncNow { lastProgress[$0.stream] = $0 }

        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(report.recordsSent, 400)
        XCTAssertEqual(report.recordsFailed, 0)
        let stats = try f.receiver.stats()
        XCTAssertEqual(stats.duplicates, 0)
        XCTAssertEqual(stats.repeated_batch_ids, 0)
        for (stream, ids) in sent {
            let stored = try f.receiver.storedIDs(stream)
            XCTAssertEqual(stored.count, ids.count, "\(stream) stored once each")
            XCTAssertEqual(Set(stored), ids, "\(stream) all delivered")
            XCTAssertEqual(try f.database.recordQueue.count(stream: stream, status: .uploaded), ids.count)
            XCTAssertEqual(try f.database.recordQueue.count(stream: stream, status: .pending), 0)
            XCTAssertEqual(lastProgress[stream]?.recordsSent, ids.count)
            XCTAssertEqual(lastProgress[stream]?.recordsTotal, ids.count)
        }

        let requests = try f.receiver.requests()
        XCTAssertEqual(requests.count, report.requests)
        for request in requests {
            XCTAssertEqual(request.status, 200)
            XCTAssertLessThanOrEqual(request.body_bytes, f.upload.batchMaxBytes, "a body over the byte bound")
            XCTAssertLessThanOrEqual(request.records, f.upload.batchMaxRecords)
            XCTAssertEqual(request.user_agent, AgentVersion.userAgent)
            XCTAssertEqual(request.content_type, "application/json")
            XCTAssertNil(request.encoding)
        }
        // 30 records of ~80 KB of base64 in 1 MB bodies: several microphone batches.
        XCTAssertGreaterThan(requests.filter { $0.stream == "microphone" }.count, 2)
        XCTAssertEqual(requests.filter { $0.stream == "location" }.count, 3, "250 records in batches of 100")
        XCTAssertEqual(Set(requests.map(\.client_port)).count, 1, "one connection reused for the whole cycle")

        let uploadStats = try f.database.recordQueue.uploadStats()
        XCTAssertEqual(uploadStats.map(\.stream), [.health, .location, .microphone])
        for stat in uploadStats {
            XCTAssertEqual(stat.recordsSent, Int64(sent[stat.stream]?.count ?? -1))
            XCTAssertNotNil(stat.lastSuccessAt)
            XCTAssertNil(stat.lastErrorCode)
        }
        XCTAssertEqual(uploader.liveness(), .healthy)
    }

    /// Behind a proxy that inflates bodies (the receiver's `--inflate`), gzip stays on.
    func testGzipBodiesAreDecodedByTheReceiver() throws {
        let f = try UploadFixture(receiverArguments: ["--inflate"])
        f.server.gzip = true
        let ids = Set(try f.enqueue(.microphone, count: 8, audioBytes: 40_000))
        let report = f.makeUploader().syncNow()
        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(Set(try f.receiver.storedIDs(.microphone)), ids)
        let requests = try f.receiver.requests()
        XCTAssertFalse(requests.isEmpty)
        for request in requests {
            XCTAssertEqual(request.encoding, "gzip")
            // base64 of noise compresses to about 3/4.
            XCTAssertLessThan(request.wire_bytes, request.body_bytes)
        }
    }

    func testPoisonRecordInABatchOf100IsTheOnlyOneFailed() throws {
        try assertPoisonIsolated(receiverArguments: [])
    }

    func testPoisonRecordIsIsolatedWhenTheServerAnswers422() throws {
        try assertPoisonIsolated(receiverArguments: ["--reject-status", "422"])
    }

    private func assertPoisonIsolated(receiverArguments: [String]) throws {
        let f = try UploadFixture(receiverArguments: receiverArguments)
        f.upload.batchMaxRecords = 100
        var records = try (0..<99).map { try TestRecords.realistic(.location, at: Date().addingTimeInterval(-Double(100 - $0))) }
        let poison = try UploadFixture.poisonLocation()
        records.insert(poison, at: 37)
        try f.database.recordQueue.enqueue(records, anchor: nil)
        let good = Set(records.filter { $0.id != poison.id }.map { $0.id.uuidString.lowercased() })

        let report = f.makeUploader().syncNow()

        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(report.recordsSent, 99)
        XCTAssertEqual(report.recordsFailed, 1)
        let stored = try f.receiver.storedIDs(.location)
        XCTAssertEqual(stored.count, 99)
        XCTAssertEqual(Set(stored), good)
        let failed = try f.database.recordQueue.records(stream: .location, status: .failed)
        XCTAssertEqual(failed.map(\.id), [poison.id])
        let reason = try XCTUnwrap(failed.first?.lastError)
        XCTAssertTrue(reason.contains("before 2000-01-01"), reason)
        XCTAssertEqual(try f.database.recordQueue.count(stream: .location, status: .uploaded), 99)
        // Halving from 100 isolates one record in at most 2 x 7 requests and the first.
        let requests = try f.receiver.requests()
        XCTAssertLessThanOrEqual(requests.count, 15)
        XCTAssertEqual(requests.first?.records, 100)
        XCTAssertEqual(try f.receiver.stats().duplicates, 0)
    }

    func testTooLargeBatchesAreSplitAndOnlyAnOversizeRecordFails() throws {
        let f = try UploadFixture(receiverArguments: ["--max-body-bytes", "250000"])
        f.upload.batchMaxBytes = 4_000_000
        let small = Set(try f.enqueue(.microphone, count: 10, audioBytes: 40_000))
        let huge = try TestRecords.realistic(.microphone, at: Date(), audioBytes: 300_000)
        try f.database.recordQueue.enqueue(huge)

        let report = f.makeUploader().syncNow()

        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(Set(try f.receiver.storedIDs(.microphone)), small)
        XCTAssertEqual(try f.database.recordQueue.records(stream: .microphone, status: .failed).map(\.id), [huge.id])
        XCTAssertTrue(try f.receiver.requests().contains { $0.status == 413 })
    }

    func testAStreamThatFailsDoesNotBlockTheOthers() throws {
        let f = try UploadFixture(receiverArguments: ["--fault", "status=503,times=forever,stream=microphone"])
        let location = Set(try f.enqueue(.location, count: 20))
        let health = Set(try f.enqueue(.health, count: 20))
        try f.enqueue(.microphone, count: 3)
        let uploader = f.makeUploader()

        let report = uploader.runScheduledCycle()

        XCTAssertEqual(Set(try f.receiver.storedIDs(.location)), location)
        XCTAssertEqual(Set(try f.receiver.storedIDs(.health)), health)
        guard case .retryLater(_, let code, _) = report.streams[.microphone]?.outcome else {
            return XCTFail("microphone should wait: \(report)")
        }
        XCTAssertEqual(code, .serverError)
        let schedule = uploader.schedule()
        XCTAssertEqual(schedule.breaker, .closed)
        XCTAssertEqual(Array(schedule.streamRetryAt.keys), [.microphone])
        XCTAssertEqual(try f.database.recordQueue.count(stream: .microphone, status: .pending), 3)
        let stats = try XCTUnwrap(try f.database.recordQueue.uploadStats().first { $0.stream == .microphone })
        XCTAssertEqual(stats.lastErrorCode, .serverError)
        XCTAssertEqual(uploader.liveness().code, .serverError)
    }

    func testAnAnswerThatBlamesTheBatchCostsAttemptsUntilTheRecordsFail() throws {
        // 409 is neither "retry later" nor "split": it blames the batch. Five of them and
        // the records fail, so such a batch is not retried forever.
        let f = try UploadFixture(receiverArguments: ["--fault", "status=409,times=forever"])
        try f.enqueue(.health, count: 4)
        let uploader = f.makeUploader()
        for attempt in 1...QueuePolicy.maxAttempts {
            let report = uploader.runScheduledCycle()
            XCTAssertEqual(report.requests, 1, "attempt \(attempt): \(report)")
            let attempts = try f.database.recordQueue.records(stream: .health).map(\.uploadAttempts)
            XCTAssertEqual(attempts, Array(repeating: attempt, count: 4))
            f.clock.advance(by: 301)
        }
        XCTAssertEqual(try f.database.recordQueue.count(stream: .health, status: .failed), 4)
        XCTAssertEqual(try f.database.recordQueue.count(stream: .health, status: .pending), 0)
    }
}

extension UploaderDeliveryTests {
    func testNothingIsSentWithoutADeviceIDOrToken() throws {
        let f = try UploadFixture()
        try f.enqueue(.location, count: 3)
        f.server.deviceID = ""
        let report = f.makeUploader().syncNow()
        guard case .notConfigured(let reason) = report.skipped else { return XCTFail("\(report)") }
        XCTAssertTrue(reason.contains("device_id"), reason)
        f.server.deviceID = "d"
        f.server.token = Secret("")
        let uploader = f.makeUploader()
        guard case .notConfigured(let reason) = uploader.syncNow().skipped else { return XCTFail("no token") }
        XCTAssertTrue(reason.contains("token"), reason)
        XCTAssertFalse(uploader.liveness().isHealthy)
        XCTAssertEqual(try f.receiver.stats().requests, 0)
        XCTAssertEqual(try f.database.recordQueue.count(stream: .location, status: .pending), 3)
    }
}

extension UploaderDeliveryTests {
    /// TLS verification is always on: a self-signed server is refused until its CA is
    /// given as `ca_file`, and nothing is dropped meanwhile.
    func testTLSIsVerifiedAgainstTheConfiguredCAFile() throws {
        let directory = try TemporaryDirectory("ariata-tls")
        let tls = try SelfSignedCertificate(in: directory.path)
        let certificate = tls.certificate

        let f = try UploadFixture()
        let receiver = try ReceiverRig(logDirectory: directory.path, token: "test-token", tls: tls.pair)
        f.server.endpoint = receiver.endpoint
        try f.enqueue(.health, count: 4)

        let refused = f.makeUploader().syncNow()
        guard case .retryLater(let reason, _, _) = refused.streams[.health]?.outcome else { return XCTFail("\(refused)") }
        XCTAssertTrue(reason.contains("ca_file"), reason)
        XCTAssertEqual(try f.database.recordQueue.count(stream: .health, status: .pending), 4)

        f.server.caFile = certificate
        let delivered = f.makeUploader().syncNow()
        XCTAssertTrue(delivered.drainedAll, "\(delivered)")
        XCTAssertEqual(try f.database.recordQueue.count(stream: .health, status: .uploaded), 4)
    }

    /// `ca_file` may name a directory of certificates by subject hash (`openssl rehash`),
    /// read as a chain needs them: the server's CA in it is trusted, a directory without it
    /// is refused and nothing is dropped.
    func testTLSIsVerifiedAgainstACADirectory() throws {
        let directory = try TemporaryDirectory("ariata-tls")
        let tls = try SelfSignedCertificate(in: directory.path)
        let receiver = try ReceiverRig(logDirectory: directory.path, token: "test-token", tls: tls.pair)
        let f = try UploadFixture()
        f.server.endpoint = receiver.endpoint
        try f.enqueue(.health, count: 3)

        let withoutIt = directory.path + "/without"
        try FileManager.default.createDirectory(atPath: withoutIt, withIntermediateDirectories: true)
        f.server.caFile = withoutIt
        let refused = f.makeUploader().syncNow()
        guard case .retryLater(let reason, _, _) = refused.streams[.health]?.outcome else { return XCTFail("\(refused)") }
        XCTAssertTrue(reason.contains("ca_file"), reason)
        XCTAssertEqual(try f.database.recordQueue.count(stream: .health, status: .pending), 3)

        let trusted = directory.path + "/trusted"
        try tls.makeTrustDirectory(trusted, systemCAs: true)
        XCTAssertEqual(CATrust.resolve(caFile: trusted, systemDirectory: nil), .directory(trusted))
        f.server.caFile = trusted
        let delivered = f.makeUploader().syncNow()
        XCTAssertTrue(delivered.drainedAll, "\(delivered)")
        XCTAssertEqual(try f.database.recordQueue.count(stream: .health, status: .uploaded), 3)
    }
}

extension UploaderDeliveryTests {
    /// The body is read through curl's read callback from its pieces. When a kept-alive
    /// connection turns out closed under a request (the server read it and closed without
    /// an answer), curl sends it again on a new connection from the body's start: the
    /// batch is delivered whole in the same cycle, nothing counted as failed.
    func testABodyIsSentAgainWholeWhenAKeptAliveConnectionCloses() throws {
        let f = try UploadFixture()
        f.upload.batchMaxRecords = 2
        try f.enqueue(.microphone, count: 4, audioBytes: 40_000)
        // The first request answers as usual (its connection is kept); the second is read,
        // then its connection closed without an answer.
        try f.receiver.addFaults(["slow=0,stream=microphone", "close,stream=microphone"])

        let report = f.makeUploader().syncNow()
        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(try f.database.recordQueue.count(stream: .microphone, status: .uploaded), 4)
        let stats = try f.receiver.stats()
        XCTAssertEqual(stats.stored(.microphone), 4)
        XCTAssertEqual(stats.duplicates, 0)
        XCTAssertEqual(stats.requests, 3, "the closed request was sent again once: \(stats)")
        XCTAssertTrue(stats.faults_pending.isEmpty, "\(stats.faults_pending)")
        // Every request carried its whole body (the receiver parsed each record of it), the
        // second on the first's connection and its resend on a new one.
        let requests = try f.receiver.requests(stream: .microphone)
        XCTAssertEqual(requests.map(\.records), [2, 2, 2], "\(requests.map(\.statusText))")
        if requests.count == 3 {
            XCTAssertEqual(requests[0].client_port, requests[1].client_port, "the second request reused the connection")
            XCTAssertNotEqual(requests[1].client_port, requests[2].client_port, "the resend came on a new connection")
            XCTAssertEqual(requests[1].body_bytes, requests[2].body_bytes, "the resend is the same body")
        }
    }
}

extension UploaderDeliveryTests {
    /// The receiver's request log is in the order requests arrived, not the order their
    /// threads finished: tests read connection reuse and resends from that order.
    func testTheReceiversRequestLogIsInTheOrderRequestsArrived() throws {
        let first = try UploadFixture()
        let second = try UploadFixture(receiverRunning: false)
        second.server = first.server
        try first.enqueue(.health, count: 2)
        try second.enqueue(.location, count: 2)
        try first.receiver.addFaults(["slow=2,stream=healthkit"])

        let slowUploader = first.makeUploader()
        let slowDone = DispatchSemaphore(value: 0)
        Thread {
            _ = slowUploader.syncNow()
            slowDone.signal()
        }.start()
        try waitUntil("the slow health request to be in flight", timeout: 20) {
            (try? first.receiver.stats().in_flight) == 1
        }
        XCTAssertTrue(second.makeUploader().syncNow().drainedAll)
        XCTAssertEqual(slowDone.wait(timeout: .now() + 30), .success)

        let requests = try first.receiver.requests()
        XCTAssertEqual(requests.map(\.stream), ["healthkit", "location"],
                       "the slow request arrived first and finished last")
    }
}
