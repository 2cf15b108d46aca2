import AgentCore
import Foundation
import Logging
import Platform
import TestRigs
import XCTest
@testable import Upload

/// The uploader against the reference receiver playing a Virtues box, through the real
/// bridge, on virtual time: the answers whose handling takes the backoff's minutes to see.
/// Inside a network namespace with loopback alone (scripts/test.sh).
final class BoxUploaderTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var database: AgentDatabase!
    private var box: ReceiverRig!
    private var server = ServerConfig()
    private var boxConfig = BoxConfig()

    override func setUpWithError() throws {
        try LoopbackOnlyNamespace.requireInside()
        directory = try TemporaryDirectory("ariata-box-upload")
        database = try AgentDatabase(path: directory.file("queue.sqlite"))
        box = try ReceiverRig.box(logDirectory: directory.path)
        server.endpoint = box.endpoint
        server.deviceID = "0f8fad5b-d9cb-469f-a165-70867728950e"
        server.connectTimeout = 5
        server.requestTimeout = 20
        // Paired as onboard pairs (BoxPairingClient, in Setup, sends the same body).
        let key = try DeviceKey.generate()
        let code = try box.addBoxPairingCode()
        let body = try JSONSerialization.data(withJSONObject: [
            "token": code, "kind": "sensor", "source": "ios", "label": "test", "device_node_id": key.endpointID,
            "device_info": ["device_name": "test", "os": "linux", "client": AgentVersion.userAgent],
        ])
        let url = server.url(path: "/api/pair/consume")
        let answer = try ServerRequest.send(server: server, timeout: 10) { _ in
            HTTPRequest(url: url, headers: [("Content-Type", "application/json")], body: body)
        }.get()
        let paired = try XCTUnwrap(JSONSerialization.jsonObject(with: answer.body) as? [String: Any], "\(answer.status)")
        boxConfig.nodeID = try XCTUnwrap(paired["box_node_id"] as? String)
        boxConfig.directAddresses = paired["box_direct_addrs"] as? [String] ?? []
        boxConfig.appletID = try XCTUnwrap((paired["applet_ids"] as? [String: String])?["ios_ingest"])
        boxConfig.key = key.seed
        boxConfig.pairedAt = RFC3339.string(from: Date())
        boxConfig.bridge = try BuildProducts.executable("ariata-iroh-bridge")
    }

    override func tearDown() {
        box?.stop()
    }

    private func uploader(_ scheduler: VirtualScheduler) -> Uploader {
        var logger = Logger(label: "ariata.upload")
        logger.logLevel = .debug
        return Uploader(server: server, box: boxConfig, upload: UploadConfig(), queue: database.recordQueue, clock: scheduler,
                        logger: logger, random: { 0 }, scheduler: scheduler)
    }

    private func enqueue(_ stream: StreamName, count: Int) throws -> [QueuedRecord] {
        let records = try (0..<count).map { try TestRecords.realistic(stream, at: Date().addingTimeInterval(-Double(count - $0))) }
        try database.recordQueue.enqueue(records, anchor: nil)
        return try database.recordQueue.records(stream: stream)
    }

    /// A 500 (the box's applet failed on the batch) is tried at each backoff step, five
    /// times in all, then the records are held back as failed with the box's words: not
    /// retried forever, not deleted. The other streams go on meanwhile.
    func testA500IsTriedABoundedNumberOfTimesThenHeldBack() throws {
        try box.addBoxFaults(["status=500,times=forever,stream=location"])
        let location = try enqueue(.location, count: 3)
        _ = try enqueue(.health, count: 2)
        let scheduler = VirtualScheduler(wallClock: Date())
        let uploader = uploader(scheduler)
        uploader.start()
        defer { uploader.stop() }
        scheduler.advance(by: 0)
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .uploaded), 2, "the other stream went")
        for step in [30.0, 60, 120, 240] {
            XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .pending), 3)
            scheduler.advance(by: step + 0.1)
        }
        let failed = try database.recordQueue.records(stream: .location, status: .failed)
        XCTAssertEqual(Set(failed.map(\.id)), Set(location.map(\.id)), "held back after five tries")
        XCTAssertTrue(failed.allSatisfy { $0.lastError?.contains("HTTP 500") == true }, "\(failed.map(\.lastError))")
        XCTAssertEqual(try box.requests(stream: .location).filter { $0.status == 500 }.count, 5)
        scheduler.advance(by: 600)
        XCTAssertEqual(try box.requests(stream: .location).count, 5, "not retried after that")
        XCTAssertEqual(try database.recordQueue.records(stream: .location).count, 3, "nothing deleted")
    }

    /// A 404 for which the box names no other applet stops with "pair again": nothing is
    /// dropped, and the box was asked once per batch.
    func testA404WithoutANewAppletSaysToPairAgain() throws {
        try box.addBoxFaults(["status=404,times=forever"])
        _ = try enqueue(.location, count: 2)
        let scheduler = VirtualScheduler(wallClock: Date())
        let uploader = uploader(scheduler)
        uploader.start()
        defer { uploader.stop() }
        scheduler.advance(by: 0)
        guard case .unhealthy(let reason, let code) = uploader.liveness() else { return XCTFail("\(uploader.liveness())") }
        XCTAssertEqual(code, .invalidToken)
        XCTAssertTrue(reason.contains("pair again"), reason)
        XCTAssertTrue(reason.contains("no other ingest applet"), reason)
        XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .pending), 2)
        XCTAssertEqual(try box.boxActivity().applet_ids_calls.count, 1)
    }
}
