import AgentCore
import Foundation
@testable import Setup
import Upload
import XCTest

/// The box's pairing answers as its code gives them (`api/pair.rs`), and its build header.
final class BoxPairingAnswerTests: XCTestCase {
    private let node = String(repeating: "0e", count: 32)

    private func judge(_ status: Int, _ body: String) -> BoxPairingClient.Outcome {
        BoxPairingClient.judge(HTTPResponse(status: status, headers: [:], body: Data(body.utf8)), url: "http://box:8000/api/pair/consume")
    }

    func testThePairingAnswerInBothNamings() {
        for ids in ["applet_ids", "action_ids"] {
            let body = #"{"device_id":"d1","redirect":"/","\#(ids)":{"ios_ingest":"ap1"},"box_node_id":"\#(node)","relay_url":"https://relay.virtues.ch","box_direct_addrs":["192.168.1.20:51820"]}"#
            XCTAssertEqual(judge(200, body), .paired(.init(deviceID: "d1", appletID: "ap1", boxNodeID: node,
                                                          relayURL: "https://relay.virtues.ch", directAddresses: ["192.168.1.20:51820"])), ids)
        }
        // LAN-only: no relay, the direct addresses are enough.
        let lan = #"{"device_id":"d1","applet_ids":{"ios_ingest":"ap1"},"box_node_id":"\#(node)","relay_url":null,"box_direct_addrs":["10.0.0.2:51820"]}"#
        XCTAssertEqual(judge(200, lan), .paired(.init(deviceID: "d1", appletID: "ap1", boxNodeID: node, relayURL: nil, directAddresses: ["10.0.0.2:51820"])))
    }

    func testEachRefusalHasItsOwnOutcome() {
        guard case .boxNotReady = judge(200, #"{"device_id":"d1","applet_ids":{"ios_ingest":"ap1"}}"#) else { return XCTFail("no reach ticket: not ready") }
        guard case .refused(let message) = judge(401, #"{"error":"invalid_or_expired_token"}"#) else { return XCTFail("401: refused") }
        XCTAssertTrue(message.contains("wrong, used or expired"), message)
        XCTAssertEqual(judge(429, #"{"error":"too_many_attempts","retry_after_secs":1800}"#), .tooManyTries(retryAfter: 1800))
        XCTAssertEqual(judge(429, "{}"), .tooManyTries(retryAfter: nil))
        guard case .failed = judge(400, #"{"error":"invalid_source"}"#) else { return XCTFail("400: failed") }
        guard case .failed = judge(200, #"{"device_id":"d1","applet_ids":{},"box_node_id":"\#(node)"}"#) else { return XCTFail("no ingest applet") }
        guard case .failed = judge(200, #"{"device_id":"d1","applet_ids":{"ios_ingest":"a"},"box_node_id":"NOTHEX"}"#) else { return XCTFail("a node id that is no key") }
    }

    func testCodesAreSixDigits() {
        XCTAssertNil(BoxPairingClient.problem(code: "123456"))
        XCTAssertNil(BoxPairingClient.problem(code: " 123 456 "))
        XCTAssertEqual(BoxPairingClient.normalized(code: "123-456"), "123456")
        for bad in ["12345", "1234567", "A1B2C3", "", "１２３４５６"] {
            XCTAssertNotNil(BoxPairingClient.problem(code: bad), bad)
        }
    }

    func testTheBuildHeaderNamesTheBox() throws {
        let box = try XCTUnwrap(ServerIdentity.box(buildHeader: "0.1.9 5e1c0de", at: Date()))
        XCTAssertEqual(box.generation, .box)
        XCTAssertEqual(box.name, "Virtues box 0.1.9, build 5e1c0de")
        XCTAssertEqual(box.proposedChunkSeconds, 300)
        XCTAssertNil(ServerIdentity.box(buildHeader: "  ", at: Date()))
        guard case .identified(let judged) = ServerIdentityClient.judge(HTTPResponse(status: 200, headers: ["x-virtues-box-build": "0.1.8 abcdef1"],
                                                                                      body: Data(#"{"status":"ok","version":"bramble","channel":"stable"}"#.utf8)), now: Date()) else {
            return XCTFail("the header wins over the body")
        }
        XCTAssertEqual(judged.name, "Virtues box 0.1.8, build abcdef1")
    }
}
