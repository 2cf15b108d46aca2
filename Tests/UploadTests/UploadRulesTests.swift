import AgentCore
import Foundation
import TestRigs
import XCTest
@testable import Upload

/// The pure rules: schedule, Retry-After, batch ids, the body, answer classification.
final class UploadRulesTests: XCTestCase {
    func testBackoffFollowsTheScheduleWithDownwardJitter() {
        let schedule = UploadTuning().backoff
        let steps: [TimeInterval] = [30, 60, 120, 240, 300, 300, 300]
        for (index, step) in steps.enumerated() {
            XCTAssertEqual(schedule.delay(afterFailures: index + 1, random: 0), step)
            XCTAssertEqual(schedule.delay(afterFailures: index + 1, random: 0.999_999), step * 0.8, accuracy: 0.001)
            for _ in 0..<50 {
                let delay = schedule.delay(afterFailures: index + 1, random: Double.random(in: 0..<1))
                XCTAssertTrue(delay > step * 0.8 - 0.001 && delay <= step, "\(delay) for step \(step)")
            }
        }
        var counter = RetryCounter(failures: 2)
        XCTAssertEqual(counter.failed(backoff: schedule, retryAfter: 7, random: 0.5), 7, "Retry-After wins")
    }

    func testRetryAfterSecondsAndHTTPDates() throws {
        let now = try XCTUnwrap(RFC3339.date(from: "1994-11-06T08:49:00Z"))
        XCTAssertEqual(RetryAfter.seconds(from: "120", now: now), 120)
        XCTAssertEqual(RetryAfter.seconds(from: " 0 ", now: now), 0)
        XCTAssertEqual(RetryAfter.seconds(from: "Sun, 06 Nov 1994 08:49:37 GMT", now: now), 37)
        XCTAssertEqual(RetryAfter.seconds(from: "Sunday, 06-Nov-94 08:49:37 GMT", now: now), 37)
        XCTAssertEqual(RetryAfter.seconds(from: "Sun Nov  6 08:49:37 1994", now: now), 37)
        XCTAssertEqual(RetryAfter.seconds(from: "Sun, 06 Nov 1994 08:00:00 GMT", now: now), 0, "a past date means now")
        XCTAssertEqual(RetryAfter.seconds(from: "99999999999999999999", now: now), RetryAfter.maximum)
        XCTAssertNil(RetryAfter.seconds(from: "soon", now: now))
        XCTAssertNil(RetryAfter.seconds(from: "-5", now: now))
        XCTAssertNil(RetryAfter.seconds(from: "", now: now))
    }

    func testSHA1AndVersion5UUIDsMatchTheStandards() {
        let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
        XCTAssertEqual(hex(BatchID.sha1(Array("abc".utf8))), "a9993e364706816aba3e25717850c26c9cd0d89d")
        XCTAssertEqual(hex(BatchID.sha1([])), "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        XCTAssertEqual(hex(BatchID.sha1(Array(repeating: UInt8(ascii: "a"), count: 1_000_000))),
                       "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
        // RFC 9562's DNS namespace and Python's uuid.uuid5(NAMESPACE_DNS, "python.org").
        let dns = UUID(uuid: (0x6B, 0xA7, 0xB8, 0x10, 0x9D, 0xAD, 0x11, 0xD1, 0x80, 0xB4, 0x00, 0xC0, 0x4F, 0xD4, 0x30, 0xC8))
        XCTAssertEqual(BatchID.v5(namespace: dns, name: Array("python.org".utf8)).uuidString.lowercased(),
                       "886313e1-3b8a-5372-9b90-0c9aee199e5d")
    }

    func testBatchIDsAreStableAndChangeWithTheRecords() {
        let ids = (0..<5).map { _ in UUID() }
        let id = BatchID.make(stream: .location, recordIDs: ids)
        XCTAssertEqual(BatchID.make(stream: .location, recordIDs: ids), id)
        XCTAssertNotEqual(BatchID.make(stream: .location, recordIDs: Array(ids.dropLast())), id)
        XCTAssertNotEqual(BatchID.make(stream: .location, recordIDs: ids + [UUID()]), id)
        XCTAssertNotEqual(BatchID.make(stream: .health, recordIDs: ids), id)
        XCTAssertEqual(id.uuidString.lowercased().dropFirst(14).first, "5", "version 5")
    }

    func testTheBodyHasTheContractsShapeAndTheStoredPayloadBytes() throws {
        let clock = Date(timeIntervalSince1970: 1_795_000_000)
        let payloads = [#"{"id":"a","x":1}"#, #"{"id":"b","y":"é\n"}"#]
        let records = payloads.enumerated().map { index, text in
            QueuedRecord(seq: Int64(index), id: UUID(), stream: .health, capturedAt: clock, payload: Data(text.utf8),
                         status: .pending, uploadAttempts: 0, lastAttemptAt: nil, lastError: nil)
        }
        let batchID = UUID()
        let built = IngestBody.build(stream: .health, deviceID: "dev \"1\"\t", records: records, batchID: batchID, timestamp: clock)
        // The payloads are pieces of the body as stored, not copies (docs/upload.md).
        for record in records {
            let stored = record.payload.withUnsafeBytes { $0.baseAddress }
            XCTAssertTrue(built.pieces.contains { piece in piece.withUnsafeBytes { $0.baseAddress } == stored }, "payload copied")
        }
        let body = built.joined
        XCTAssertEqual(body.count, built.count)
        let text = String(decoding: body, as: UTF8.self)
        XCTAssertTrue(text.contains(#""records":[{"id":"a","x":1},{"id":"b","y":"é\n"}]"#), "payload bytes verbatim: \(text)")
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: body) as? [String: Any])
        XCTAssertEqual(object["source"] as? String, "linux")
        XCTAssertEqual(object["stream"] as? String, "healthkit", "the contract's wire name, not the agent's own")
        XCTAssertEqual(object["device_id"] as? String, "dev \"1\"\t")
        XCTAssertEqual((object["records"] as? [Any])?.count, 2)
        XCTAssertEqual(object["timestamp"] as? String, RFC3339.string(from: clock))
        XCTAssertTrue(object["checkpoint"] is NSNull)
        let metadata = try XCTUnwrap(object["batch_metadata"] as? [String: Any])
        XCTAssertEqual(metadata["total_records"] as? Int, 2)
        XCTAssertEqual(metadata["app_version"] as? String, AgentVersion.string)
        XCTAssertEqual(metadata["batch_id"] as? String, batchID.uuidString.lowercased())
        XCTAssertLessThanOrEqual(body.count - payloads.reduce(0) { $0 + $1.utf8.count }, IngestBody.envelopeAllowance)
    }

    func testGzipOutputIsAGzipStream() throws {
        let input = Data(String(repeating: "ariata ", count: 10_000).utf8)
        let compressed = try Gzip.compress(RequestBody([input]))
        XCTAssertEqual(Array(compressed.prefix(2)), [0x1F, 0x8B])
        XCTAssertLessThan(compressed.count, input.count / 20)
        // The trailer holds the input length (mod 2^32), little-endian.
        let tail = Array(compressed.suffix(4))
        let length = tail.enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
        XCTAssertEqual(length, input.count)
    }

    /// A body in pieces compresses to one gzip stream of the pieces in order.
    func testGzipOfPiecesIsOneStreamOfTheWhole() throws {
        let pieces = (0..<50).map { Data("piece \($0) ".utf8 + Data(repeating: UInt8($0), count: 3_000)) }
        let body = RequestBody(pieces)
        let compressed = try Gzip.compress(body)
        let directory = try TemporaryDirectory("ariata-gzip")
        let file = directory.path + "/body.gz"
        try compressed.write(to: URL(fileURLWithPath: file))
        let gunzip = try ChildProcess("gzip", ["-dc", file], name: "gunzip", logDirectory: directory.path)
        XCTAssertEqual(gunzip.wait(timeout: 30), 0, gunzip.stderr())
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: gunzip.stdoutPath)), body.joined, "gzip -dc gives back the pieces in order")
        XCTAssertEqual(try Gzip.compress(RequestBody()).prefix(2), Data([0x1F, 0x8B]), "an empty body is a gzip stream too")
    }

    func testAnswersMapToTheContractsActions() {
        let now = Date()
        func verdict(_ status: Int, _ body: String = "", headers: [String: String] = [:], sent: Int = 3) -> IngestVerdict {
            IngestVerdict.of(.success(HTTPResponse(status: status, headers: headers, body: Data(body.utf8))), sent: sent, now: now)
        }
        XCTAssertEqual(verdict(200, #"{"accepted":3,"rejected":0,"next_checkpoint":null,"activity_id":"a"}"#), .accepted)
        XCTAssertEqual(verdict(201, #"{"accepted":0,"rejected":0}"#, sent: 0), .accepted, "an empty batch proves itself")
        guard case .rejected(let reason, let named) = verdict(200, #"{"accepted":0,"rejected":3,"errors":[{"id":"x","error":"bad time"}]}"#) else {
            return XCTFail("200 with rejected > 0 is not a success")
        }
        XCTAssertTrue(reason.contains("x: bad time"), reason)
        XCTAssertEqual(named, [], "an id that is not a UUID names nothing")
        let id = UUID()
        let naming = #"{"accepted":2,"rejected":1,"errors":[{"id":"\#(id.uuidString.lowercased())","error":"bad time"},{"error":"no id"}]}"#
        guard case .partlyAccepted(2, 1, _, let partNamed) = verdict(200, naming) else {
            return XCTFail("200 with accepted and rejected > 0 stored part of the batch")
        }
        XCTAssertEqual(partNamed, [id])
        guard case .rejected(_, [id]) = verdict(422, #"{"errors":[{"id":"\#(id.uuidString)","error":"bad"}]}"#) else {
            return XCTFail("a 422 that names its record")
        }
        for status in [400, 413, 422] {
            guard case .rejected = verdict(status) else { return XCTFail("\(status) splits") }
        }
        for status in [401, 403] {
            guard case .unauthorized(let reason) = verdict(status) else { return XCTFail("\(status) pauses") }
            XCTAssertTrue(reason.contains("refused the device token"), reason)
        }
        // Virtues' web login in front of /ingest: every device is refused, whatever its token.
        guard case .unauthorized(let wall) = verdict(401, #"{"error":"Unauthorized"}"#) else { return XCTFail("a login wall pauses too") }
        XCTAssertTrue(wall.contains("the server refuses every device, not just this token"), wall)
        XCTAssertFalse(wall.contains("get a new device token"), wall)
        for body in [#"{"error":"Invalid or revoked device token"}"#, #"{"error":"Unauthorized","message":"x"}"#, "Unauthorized"] {
            guard case .unauthorized(let reason) = verdict(401, body) else { return XCTFail(body) }
            XCTAssertTrue(reason.contains("refused the device token"), "\(body): \(reason)")
        }
        XCTAssertEqual(verdict(503, headers: ["retry-after": "42"]),
                       .retryLater(reason: "HTTP 503: no explanation in the answer", code: .serverError, retryAfter: 42))
        guard case .retryLater(_, .rateLimited, 9) = verdict(429, headers: ["retry-after": "9"]) else { return XCTFail("429") }
        guard case .retryLater(_, .networkTimeout, nil) = verdict(408) else { return XCTFail("408") }
        guard case .retryLater(_, .notIngestEndpoint, nil) = verdict(404) else { return XCTFail("404 is the endpoint, not the records") }
        guard case .blamed = verdict(409) else { return XCTFail("409 blames the batch") }
        let timeout = IngestVerdict.of(.failure(TransportFailure(kind: .timedOut, detail: "t")), sent: 1, now: now)
        XCTAssertEqual(timeout, .retryLater(reason: "time-out: t", code: .networkTimeout, retryAfter: nil))
    }

    /// The table in docs/upload.md, Refused batches: what each refusal proves stored and how the rest goes again.
    func testRefusalPlansFollowWhatTheAnswerProves() {
        let batch = (0..<6).map { index in
            QueuedRecord(seq: Int64(index), id: UUID(), stream: .health, capturedAt: Date(), payload: Data("{}".utf8),
                         status: .pending, uploadAttempts: 0, lastAttemptAt: nil, lastError: nil)
        }
        let bad: Set<UUID> = [batch[1].id, batch[4].id]
        let good = [batch[0], batch[2], batch[3], batch[5]]
        // Accepted 0: nothing stored; the named ones alone first, then the others together.
        XCTAssertEqual(RefusalPlan.refused(batch, named: bad), .namedAloneFirst(named: [batch[1], batch[4]], others: good))
        XCTAssertEqual(RefusalPlan.refused(batch, named: []), .halves)
        XCTAssertEqual(RefusalPlan.refused(batch, named: [UUID()]), .halves, "a name outside the batch")
        // Accepted 4 of 6 naming the 2 refused: the other 4 are proven stored.
        XCTAssertEqual(RefusalPlan.partlyAccepted(batch, accepted: 4, rejected: 2, named: bad),
                       .storedExceptNamed(stored: good, named: [batch[1], batch[4]]))
        // Anything less leaves unknown which were stored.
        XCTAssertEqual(RefusalPlan.partlyAccepted(batch, accepted: 4, rejected: 2, named: []), .eachAlone)
        XCTAssertEqual(RefusalPlan.partlyAccepted(batch, accepted: 4, rejected: 2, named: [batch[1].id]), .eachAlone)
        XCTAssertEqual(RefusalPlan.partlyAccepted(batch, accepted: 3, rejected: 2, named: bad), .eachAlone, "counts short of the batch")
        XCTAssertEqual(RefusalPlan.partlyAccepted(batch, accepted: 4, rejected: 2, named: [batch[1].id, UUID()]), .eachAlone)
    }

    /// A 2xx proves delivery only with the ingest answer accounting for every record sent.
    func testA2xxWithoutTheIngestAnswerIsNotASuccess() {
        let now = Date()
        func verdict(_ status: Int, _ body: String, type: String = "application/json", sent: Int = 3) -> IngestVerdict {
            IngestVerdict.of(.success(HTTPResponse(status: status, headers: ["content-type": type], body: Data(body.utf8))),
                             sent: sent, now: now)
        }
        let cases: [(IngestVerdict, String)] = [
            (verdict(200, "<!DOCTYPE html><html><body>Sign in</body></html>", type: "text/html"), "a web page"),
            (verdict(200, "  <html></html>", type: ""), "a web page"),
            (verdict(204, ""), "an empty body"),
            (verdict(200, "{}"), "JSON without the ingest answer"),
            (verdict(200, #"{"ok":true}"#), "JSON without the ingest answer"),
            (verdict(200, #"{"accepted":true,"rejected":false}"#), "JSON without the ingest answer"),
            (verdict(200, #"{"accepted":"3","rejected":"0"}"#), "JSON without the ingest answer"),
            (verdict(200, #"{"accepted":2.5,"rejected":0}"#), "JSON without the ingest answer"),
            (verdict(200, "OK", type: "text/plain"), "not JSON"),
            (verdict(200, #"{"accepted":2,"rejected":0}"#), "accepted 2 and rejected 0 for 3 records"),
            (verdict(200, #"{"accepted":4,"rejected":0}"#), "accepted 4 and rejected 0 for 3 records"),
        ]
        for (outcome, words) in cases {
            guard case .retryLater(let reason, .notIngestEndpoint, nil) = outcome else {
                XCTFail("not a success and not the records' fault: \(outcome)")
                continue
            }
            XCTAssertTrue(reason.contains(words), "\(reason) should say \(words)")
        }
    }

    func testBreakerOpensAfterThresholdAndProbesHalfOpen() {
        var breaker = CircuitBreaker(threshold: 3)
        let schedule = Backoff(base: 30, cap: 300)
        let t0 = Date()
        XCTAssertFalse(breaker.recordFailure(at: t0, retryAfter: nil, schedule: schedule, random: 0))
        XCTAssertFalse(breaker.recordFailure(at: t0, retryAfter: nil, schedule: schedule, random: 0))
        XCTAssertEqual(breaker.state(at: t0), .closed)
        XCTAssertTrue(breaker.recordFailure(at: t0, retryAfter: nil, schedule: schedule, random: 0))
        XCTAssertEqual(breaker.state(at: t0), .open(until: t0.addingTimeInterval(30)))
        XCTAssertEqual(breaker.state(at: t0.addingTimeInterval(30)), .halfOpen)
        // A failed probe reopens for the next step at once.
        let t1 = t0.addingTimeInterval(30)
        XCTAssertTrue(breaker.recordFailure(at: t1, retryAfter: nil, schedule: schedule, random: 0))
        XCTAssertEqual(breaker.state(at: t1), .open(until: t1.addingTimeInterval(60)))
        breaker.recordSuccess()
        XCTAssertEqual(breaker.state(at: t1), .closed)
        XCTAssertEqual(breaker.trips, 0)
    }

    func testGrowingPauseDoublesUpToAnHour() {
        var pause = GrowingPause(UploadTuning().authPause)
        let t = Date()
        let lengths = (0..<7).map { _ in pause.refused(at: t).timeIntervalSince(t) }
        XCTAssertEqual(lengths, [300, 600, 1_200, 2_400, 3_600, 3_600, 3_600])
        XCTAssertTrue(pause.isPaused(at: t.addingTimeInterval(3_599)))
        XCTAssertFalse(pause.isPaused(at: t.addingTimeInterval(3_600)))
        pause.clear()
        XCTAssertFalse(pause.isPaused(at: t))
    }
}
