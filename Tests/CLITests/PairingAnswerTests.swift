import AgentCore
import Foundation
@testable import Setup
import Upload
import XCTest

/// The pure rules of pairing and linking: the answers of both server generations, the
/// refusals that must be told apart, and what a link check's answer means.
final class PairingAnswerTests: XCTestCase {
    private func response(_ status: Int, _ body: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [:], body: Data(body.utf8))
    }

    func testBothShapesOfAvailableStreamsAreRead() throws {
        let ariata = #"{"source_id":"s1","device_token":"t1","available_streams":[{"name":"location","display_name":"Location"},{"name":"healthkit"}]}"#
        let virtues = #"{"source_id":"s2","device_token":"t2","available_streams":[{"descriptor":{"name":"location","source":"ios"},"config_schema":{},"config_example":{}},{"descriptor":{"name":"microphone"},"config_schema":null,"config_example":null}]}"#
        for (body, token, source, streams) in [(ariata, "t1", "s1", ["location", "healthkit"]), (virtues, "t2", "s2", ["location", "microphone"])] {
            let answer = try XCTUnwrap(PairingAnswer(Data(body.utf8)), body)
            XCTAssertEqual(answer.token, Secret(token))
            XCTAssertEqual(answer.sourceID, source)
            XCTAssertEqual(answer.streams, streams)
        }
        // A token with a stream list of no known shape, or none at all, is still a pairing answer.
        for body in [#"{"device_token":"t3","available_streams":[{"kind":"x"},7,"healthkit"]}"#,
                     #"{"device_token":"t3","available_streams":{"location":true}}"#,
                     #"{"device_token":"t3"}"#] {
            let answer = try XCTUnwrap(PairingAnswer(Data(body.utf8)), body)
            XCTAssertEqual(answer.token, Secret("t3"))
            XCTAssertEqual(answer.streams, [], body)
            guard case .paired = PairingClient.judge(response(200, body), url: "u") else { return XCTFail("\(body) paired") }
        }
        for body in [#"{"device_token":""}"#, #"{"token":"t"}"#, "<html>Sign in</html>", "[]"] {
            XCTAssertNil(PairingAnswer(Data(body.utf8)), body)
            guard case .failed(let message, _) = PairingClient.judge(response(200, body), url: "u") else { return XCTFail(body) }
            XCTAssertTrue(message.contains("not a pairing answer (no device_token)"), message)
        }
    }

    func testRefusalsAreToldApart() {
        let deprecated = #"{"error":"Pairing code flow is deprecated. Use /link or QR pairing endpoint."}"#
        guard case .linksByID(let message) = PairingClient.judge(response(400, deprecated), url: "u") else { return XCTFail("Virtues' 400") }
        XCTAssertTrue(message.contains("no longer takes pairing codes"), message)
        guard case .refused(let wrong) = PairingClient.judge(response(400, #"{"error":"Invalid or expired pairing code"}"#), url: "u") else {
            return XCTFail("a wrong code")
        }
        XCTAssertTrue(wrong.contains("did not accept the pairing code (HTTP 400: Invalid or expired pairing code)"), wrong)
        // A 404 naming the session is an unknown session; one without words, no endpoint.
        guard case .refused = PairingClient.judge(response(404, #"{"error":"Pairing session not found"}"#), url: "u", sessionRoute: true) else {
            return XCTFail("an unknown session")
        }
        guard case .failed = PairingClient.judge(response(404, ""), url: "u", sessionRoute: true) else { return XCTFail("no endpoint") }
        guard case .failed = PairingClient.judge(response(404, #"{"error":"x"}"#), url: "u") else { return XCTFail("the code flow's 404") }
        guard case .failed(let wall, _) = PairingClient.judge(response(401, EveryDeviceRefused.body), url: "u") else { return XCTFail("the wall") }
        XCTAssertTrue(wall.contains("refuses every device"), wall)
    }

    func testAPairingQRCodesTextGivesItsEndpointAndSource() {
        XCTAssertEqual(PairingQRCode(text: #"{"e":"https://v.example.org/api/","s":"source_1"}"#),
                       PairingQRCode(endpoint: "https://v.example.org", sourceID: "source_1"))
        XCTAssertEqual(PairingQRCode(text: #"{"e":"https://v.example.org","s":"source_1"}"#)?.endpoint, "https://v.example.org")
        XCTAssertEqual(PairingQRCode(text: #"{"s":"source_2"}"#), PairingQRCode(endpoint: nil, sourceID: "source_2"))
        for text in ["source_3", #"{"e":"x"}"#, #"{"s":""}"#, #"{"s":4}"#, "{"] {
            XCTAssertNil(PairingQRCode(text: text), text)
        }
    }

    func testCodesAreSentAsTheWebUIShowsThem() {
        XCTAssertEqual(PairingClient.normalized(code: " a1b2c3\n"), "A1B2C3")
        XCTAssertEqual(PairingClient.normalized(code: "K7M2Q9"), "K7M2Q9")
    }

    func testOnlyTheLoginWallsExactBodyMeansEveryDeviceIsRefused() {
        XCTAssertTrue(EveryDeviceRefused.matches(response(401, #"{"error":"Unauthorized"}"#)))
        XCTAssertTrue(EveryDeviceRefused.matches(response(401, #"{ "error" : "Unauthorized" }"#)))
        XCTAssertFalse(EveryDeviceRefused.matches(response(403, #"{"error":"Unauthorized"}"#)))
        XCTAssertFalse(EveryDeviceRefused.matches(response(401, #"{"error":"Invalid or revoked device token","message":"Unauthorized: x"}"#)))
        XCTAssertFalse(EveryDeviceRefused.matches(response(401, #"{"error":"Unauthorized","hint":"x"}"#)))
        XCTAssertFalse(EveryDeviceRefused.matches(response(401, "Unauthorized")))
    }

    func testWhatALinkChecksAnswerMeans() {
        let table: [(HTTPResponse, String)] = [
            (response(200, #"{"status":"active","source_id":"s"}"#), "linked"),
            (response(401, #"{"error":"Invalid or revoked device token"}"#), "notYet"),
            (response(401, ""), "notYet"),
            (response(403, ""), "notYet"),
            (response(401, EveryDeviceRefused.body), "stop"),
            (response(200, "<html>login</html>"), "stop"),
            (response(404, ""), "stop"),
            (response(302, ""), "stop"),
            (response(503, ""), "trouble"),
            (response(429, ""), "trouble"),
        ]
        for (answer, expected) in table {
            let state = DeviceLinkCheck.judge(answer, url: "u")
            let name = switch state {
            case .linked: "linked"
            case .notYet: "notYet"
            case .stop: "stop"
            case .trouble: "trouble"
            }
            XCTAssertEqual(name, expected, "HTTP \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        }
        guard case .stop(let wall, _) = DeviceLinkCheck.judge(response(401, EveryDeviceRefused.body), url: "u") else { return XCTFail() }
        XCTAssertTrue(wall.contains("refuses every device"), wall)
        guard case .stop(let missing, let hint) = DeviceLinkCheck.judge(response(404, ""), url: "u") else { return XCTFail() }
        XCTAssertTrue(missing.contains("does not link devices by their id"), missing)
        XCTAssertTrue(hint.contains("onboard --code"), hint)
    }

    func testTheQRCodeIsTheLibrarysSymbolWithItsQuietZone() throws {
        let id = "61dbdea0-a173-45f5-ba5f-153b7120d3fc"
        let code = try XCTUnwrap(QRCode(text: id))
        XCTAssertEqual(code.version, 3, "36 bytes at level M need version 3")
        XCTAssertEqual(code.size, 29)
        let lines = code.terminalLines(colours: false)
        let span = code.size + 2 * QRCode.quietZone
        XCTAssertEqual(lines.count, (span + 1) / 2, "two module rows a line")
        XCTAssertTrue(lines.allSatisfy { $0.count == span })
        XCTAssertEqual(lines.first, String(repeating: "█", count: span), "the quiet zone is light")
        XCTAssertTrue(code.terminalLines(colours: true).allSatisfy { $0.hasPrefix("\u{1B}[97;40m") && $0.hasSuffix("\u{1B}[0m") })
        XCTAssertNil(QRCode(text: ""))
        XCTAssertNil(QRCode(text: String(repeating: "x", count: 3_000)), "more than a version-40 code holds")
    }
}
