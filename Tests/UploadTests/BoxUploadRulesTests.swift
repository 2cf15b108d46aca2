import AgentCore
import Foundation
import XCTest
@testable import Upload

/// The pure rules of uploading to a Virtues box: the device's key, what its answers
/// mean, the request (no token, never gzip, `source "ios"`), and silent chunks sent as
/// the box's own app sends them (the contract's section "The Virtues box").
final class BoxUploadRulesTests: XCTestCase {
    private func response(_ status: Int, _ body: String, headers: [String: String] = [:]) -> Result<HTTPResponse, TransportFailure> {
        .success(HTTPResponse(status: status, headers: headers, body: Data(body.utf8)))
    }

    private func verdict(_ status: Int, _ body: String) -> IngestVerdict {
        BoxAnswer.verdict(response(status, body), sent: 3, now: Date())
    }

    func testTheDeviceKeyIsEd25519AsRFC8032Says() throws {
        // RFC 8032, section 7.1, TEST 1: the secret key (seed) and its public key.
        let key = try DeviceKey(seedHex: Secret("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
        XCTAssertEqual(key.endpointID, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        let made = try DeviceKey.generate()
        XCTAssertTrue(BoxConfig.isKeyHex(made.seed.value))
        XCTAssertTrue(BoxConfig.isKeyHex(made.endpointID), "64 lower-case hex, as the box compares it")
        XCTAssertNotEqual(made.seed.value, made.endpointID)
        XCTAssertEqual(try DeviceKey(seedHex: made.seed), made, "the same seed gives the same identity")
        XCTAssertNotEqual(try DeviceKey.generate().seed, made.seed)
        XCTAssertEqual("\(made.seed)", "<redacted>", "the seed is never printed")
        for bad in ["", "9D61B19DEFFD5A60BA844AF492EC2CC44449C5697B326919703BAC031CAE7F60", String(repeating: "a", count: 63), String(repeating: "g", count: 64)] {
            XCTAssertThrowsError(try DeviceKey(seedHex: Secret(bad)), bad)
        }
    }

    func testOnlyTwoHundredWithSuccessDelivers() {
        XCTAssertEqual(verdict(200, #"{"run_id":"r1","status":"success"}"#), .accepted)
        for body in [#"{"run_id":"r1","status":"skipped"}"#, #"{"accepted":3,"rejected":0}"#, "<html>portal</html>", ""] {
            guard case .retryLater(_, let code, _) = verdict(200, body) else { return XCTFail("\(body): not proven stored") }
            XCTAssertEqual(code, .notIngestEndpoint, body)
        }
    }

    func testEachOtherAnswerOfTheBox() {
        guard case .retryLater(let skipped, nil, nil) = verdict(409, #"{"status":"skipped"}"#) else { return XCTFail("409 skipped: later") }
        XCTAssertTrue(skipped.contains("still storing"), skipped)
        guard case .retryLater(let unread, nil, nil) = verdict(409, #"{"error":"invalid_json"}"#) else { return XCTFail("409: later") }
        XCTAssertTrue(unread.contains("could not read"), unread)
        for status in [401, 403] {
            guard case .unauthorized(let reason) = verdict(status, #"{"error":"forbidden"}"#) else { return XCTFail("\(status): pair again") }
            XCTAssertTrue(reason.contains("pair again"), reason)
        }
        guard case .appletUnknown = verdict(404, #"{"error":"not_found"}"#) else { return XCTFail("404: ask for the applet") }
        guard case .blamed(let failed) = verdict(500, #"{"error":"unknown stream"}"#) else { return XCTFail("500: bounded by attempts") }
        XCTAssertTrue(failed.contains("unknown stream"), failed)
        let closed = BoxAnswer.verdict(.failure(TransportFailure(kind: .notAllowlisted, detail: "not allowlisted")), sent: 1, now: Date())
        guard case .unauthorized(let why) = closed else { return XCTFail("not allowlisted: pair again") }
        XCTAssertTrue(why.contains("pair again"), why)
        guard case .retryLater = BoxAnswer.verdict(.failure(TransportFailure(kind: .cannotConnect, detail: "unreachable")), sent: 1, now: Date()) else {
            return XCTFail("an unreachable box: later")
        }
    }

    func testTheCurrentAppletIsReadInEveryShape() {
        for body in [#"{"ios_ingest":"a2"}"#, #"{"applet_ids":{"ios_ingest":"a2"}}"#, #"{"action_ids":{"ios_ingest":"a2"}}"#] {
            XCTAssertEqual(BoxAnswer.ingestApplet(in: Data(body.utf8)), "a2", body)
        }
        for body in [#"{"applet_ids":{}}"#, #"{"ios_ingest":""}"#, "[]", "nope"] {
            XCTAssertNil(BoxAnswer.ingestApplet(in: Data(body.utf8)), body)
        }
    }

    private func boxSettings(silentAudio: SilentAudio = .omit) -> ServerSettings {
        var server = ServerConfig()
        server.endpoint = "http://192.168.1.20:8000"
        server.deviceID = "0f8fad5b-d9cb-469f-a165-70867728950e"
        server.token = Secret("an-old-token")
        server.gzip = true
        var box = BoxConfig()
        box.nodeID = String(repeating: "ab", count: 32)
        box.appletID = "applet-7"
        box.key = Secret(String(repeating: "01", count: 32))
        box.directAddresses = ["192.168.1.20:51820"]
        box.silentAudio = silentAudio
        return ServerSettings(server, box: box)
    }

    func testTheRequestToTheBoxHasNoTokenNoGzipAndSourceIOS() throws {
        let settings = boxSettings()
        XCTAssertNil(settings.configurationProblem)
        XCTAssertEqual(settings.ingestURL, "http://virtues-box/webhook/applet-7")
        let record = QueuedRecord(seq: 1, id: UUID(), stream: .location, capturedAt: Date(),
                                  payload: Data(#"{"latitude":1,"longitude":2}"#.utf8), status: .pending,
                                  uploadAttempts: 0, lastAttemptAt: nil, lastError: nil)
        let body = IngestBody.build(stream: .location, deviceID: settings.deviceID, records: [record], batchID: UUID(),
                                    timestamp: Date(), box: settings.box)
        let request = try IngestBody.request(settings: settings, body: body, batchID: UUID())
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: request.body.joined) as? [String: Any], "plain JSON, not gzip")
        XCTAssertEqual(object["source"] as? String, "ios")
        XCTAssertEqual(object["stream"] as? String, "location")
        XCTAssertEqual(object["device_id"] as? String, settings.deviceID)
        let names = request.headers.map { $0.name.lowercased() }
        XCTAssertFalse(names.contains("authorization"))
        XCTAssertFalse(names.contains("x-device-token"))
        XCTAssertFalse(names.contains("content-encoding"))
        XCTAssertFalse(request.body.joined.contains(Data("an-old-token".utf8)))
        // The older servers' body is unchanged.
        let linux = IngestBody.build(stream: .location, deviceID: "d", records: [record], batchID: UUID(), timestamp: Date())
        XCTAssertEqual((try JSONSerialization.jsonObject(with: linux.joined) as? [String: Any])?["source"] as? String, "linux")
    }

    private func chunk(mean: Double?, peak: Double?, silent: Bool = false) -> QueuedRecord {
        var fields = [#""duration_seconds":300"#, #""is_silent":\#(silent)"#, #""timestamp_start":"2026-11-28T10:00:00.000Z""#]
        if let mean { fields.append(#""average_db_level":\#(mean)"#) }
        if let peak { fields.append(#""peak_db_level":\#(peak)"#) }
        let payload = "{" + fields.sorted().joined(separator: ",") + #","audio_data":"T2dnUwACAAAAAAAA"}"#
        return QueuedRecord(seq: 1, id: UUID(), stream: .microphone, capturedAt: Date(), payload: Data(payload.utf8),
                            status: .pending, uploadAttempts: 0, lastAttemptAt: nil, lastError: nil)
    }

    private func shaped(_ record: QueuedRecord, _ silentAudio: SilentAudio = .omit) throws -> [String: Any] {
        let data = BoxRecordShape.payload(of: record, silentAudio: silentAudio)
        return try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any], String(decoding: data, as: UTF8.self))
    }

    func testASilentChunkGoesWithoutAudioByTheBoxAppsRule() throws {
        // Below -60 dBFS mean and below -50 dBFS peak: no audio, is_silent true.
        for (mean, peak) in [(-60.1, -50.1), (-100.0, -100.0), (-75.0, -55.0)] {
            let object = try shaped(chunk(mean: mean, peak: peak))
            XCTAssertNil(object["audio_data"], "mean \(mean), peak \(peak)")
            XCTAssertEqual(object["is_silent"] as? Bool, true)
            XCTAssertEqual((object["duration_seconds"] as? NSNumber)?.intValue, 300)
            XCTAssertEqual(object["timestamp_start"] as? String, "2026-11-28T10:00:00.000Z")
        }
        // At or above either limit, or without both levels, the audio goes.
        for (mean, peak) in [(-60.0, -55.0), (-59.9, -70.0), (-65.0, -50.0), (-65.0, -49.9)] as [(Double?, Double?)] + [(nil, -70.0), (-70.0, nil), (nil, nil)] {
            let object = try shaped(chunk(mean: mean, peak: peak))
            XCTAssertEqual(object["audio_data"] as? String, "T2dnUwACAAAAAAAA", "mean \(String(describing: mean)), peak \(String(describing: peak))")
            XCTAssertEqual(object["is_silent"] as? Bool, false)
        }
        // silent_audio = "send" keeps the audio of every chunk.
        XCTAssertNotNil(try shaped(chunk(mean: -90, peak: -80), .send)["audio_data"])
        // Other streams are never touched.
        var location = chunk(mean: -90, peak: -80)
        location.stream = .location
        XCTAssertEqual(BoxRecordShape.payload(of: location, silentAudio: .omit), location.payload)
    }
}
