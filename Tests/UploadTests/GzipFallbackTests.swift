import AgentCore
import Foundation
import Reports
import TestRigs
@testable import Upload
import XCTest

/// `[server] gzip = true` against a server that does not inflate bodies (both real ones
/// answer a gzip body 400 with a plain-text error, as the receiver does without
/// `--inflate`): the batch goes again uncompressed, once, whole; the rest of the process
/// sends uncompressed; `status` says why (docs/upload.md#gzip).
final class GzipFallbackTests: XCTestCase {
    func testA400ToAGzipBodyIsRetriedUncompressedAndUploadsStayUncompressed() throws {
        let f = try UploadFixture()
        f.server.gzip = true
        let first = Set(try f.enqueue(.location, count: 8))
        let uploader = f.makeUploader()
        let report = uploader.syncNow()
        XCTAssertTrue(report.drainedAll, "\(report)")
        XCTAssertEqual(Set(try f.receiver.storedIDs(.location)), first, "the whole batch stored")
        XCTAssertEqual(try f.database.recordQueue.count(stream: .location, status: .failed), 0, "nothing refused")
        var requests = try f.receiver.requests()
        XCTAssertEqual(requests.map(\.encoding), ["gzip", nil], "one gzip attempt, then the same batch uncompressed")
        XCTAssertEqual(requests.map(\.status), [400, 200])
        XCTAssertEqual(requests[1].records, 8, "not split")
        XCTAssertEqual(uploader.liveness(), .healthy, "not a stream refusal")
        XCTAssertNotNil(try f.database.agentState.value(AgentStateKey.uploadPlainBodiesSince))

        // Later batches go uncompressed at once.
        let second = Set(try f.enqueue(.health, count: 3))
        XCTAssertTrue(uploader.syncNow().drainedAll)
        requests = try f.receiver.requests()
        XCTAssertEqual(requests.count, 3)
        XCTAssertNil(requests[2].encoding)
        XCTAssertEqual(Set(try f.receiver.storedIDs(.health)), second)

        // status names the cause and the fix.
        var config = AgentConfig()
        config.server = f.server
        config.storage.database = f.database.path
        let status = StatusReader().read(config: config, configFile: f.directory.file("agent.toml"))
        XCTAssertNotNil(status.uploader.uncompressedSince)
        XCTAssertTrue(status.warnings.contains { $0.contains("does not inflate gzip bodies") && $0.contains("gzip = false") },
                      "\(status.warnings)")

        // A new uploader (a restart or reload) tries gzip again, and finds it still refused:
        // status keeps saying so all along.
        let restarted = f.makeUploader()
        XCTAssertNotNil(try f.database.agentState.value(AgentStateKey.uploadPlainBodiesSince), "kept until a gzip body is read")
        try f.enqueue(.location, count: 2)
        XCTAssertTrue(restarted.syncNow().drainedAll)
        XCTAssertEqual(try f.receiver.requests().suffix(2).map(\.encoding), ["gzip", nil])
        XCTAssertNotNil(try f.database.agentState.value(AgentStateKey.uploadPlainBodiesSince))
    }

    /// A proxy that inflates put in front since: the next process's gzip body is read, and
    /// `status` stops saying the server does not inflate.
    func testAGzipBodyReadLaterClearsTheNote() throws {
        let f = try UploadFixture(receiverArguments: ["--inflate"])
        f.server.gzip = true
        try f.database.agentState.set(AgentStateKey.uploadPlainBodiesSince, RFC3339.string(from: Date()))
        try f.enqueue(.location, count: 2)
        XCTAssertTrue(f.makeUploader().syncNow().drainedAll)
        XCTAssertEqual(try f.receiver.requests().map(\.encoding), ["gzip"])
        XCTAssertNil(try f.database.agentState.value(AgentStateKey.uploadPlainBodiesSince))
    }

    /// 415 (Unsupported Media Type), what a server that knows it cannot inflate may say.
    func testA415ToAGzipBodyIsRetriedUncompressed() throws {
        let f = try UploadFixture(receiverArguments: ["--inflate", "--fault", "status=415"])
        f.server.gzip = true
        let ids = Set(try f.enqueue(.microphone, count: 2))
        XCTAssertTrue(f.makeUploader().syncNow().drainedAll)
        XCTAssertEqual(Set(try f.receiver.storedIDs(.microphone)), ids)
        XCTAssertEqual(try f.receiver.requests().map(\.status), [415, 200])
        XCTAssertEqual(try f.receiver.requests().map(\.encoding), ["gzip", nil])
    }

    /// A batch that is bad uncompressed too is the batch's fault: split as ever, and gzip
    /// is not given up for it.
    func testABadBatchIsStillSplitAndGzipKept() throws {
        let f = try UploadFixture(receiverArguments: ["--inflate", "--reject-status", "400"])
        f.server.gzip = true
        let good = Set(try f.enqueue(.location, count: 3))
        try f.database.recordQueue.enqueue([try UploadFixture.poisonLocation()], anchor: nil)
        XCTAssertTrue(f.makeUploader().syncNow().drainedAll)
        XCTAssertEqual(Set(try f.receiver.storedIDs(.location)), good)
        XCTAssertEqual(try f.database.recordQueue.count(stream: .location, status: .failed), 1, "the poison record alone failed")
        XCTAssertNil(try f.database.agentState.value(AgentStateKey.uploadPlainBodiesSince), "the server inflates: gzip stays")
    }
}
