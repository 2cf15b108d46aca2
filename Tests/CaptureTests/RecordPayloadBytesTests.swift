import AgentCore
@testable import Capture
import XCTest

/// The location and microphone payloads are the very bytes JSONSerialization (sorted keys,
/// slashes unescaped) made before `RecordJSON` replaced it: the wire does not change.
final class RecordPayloadBytesTests: XCTestCase {
    private func foundationBytes(_ payload: Data) throws -> String {
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: payload) as? [String: Any])
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    func testLocationPayloadsAreJSONSerializationsBytes() throws {
        let now = Date(timeIntervalSince1970: 1_790_000_000)
        let fixes = [
            LocationFix(mode: 3, time: FixTime(seconds: 1_789_999_990, nanoseconds: 250_000_000),
                   latitude: 52.520008, longitude: -13.404954, altitude: 34.5, speed: 5.144, course: 45.25,
                   horizontalAccuracy: 17.1, verticalAccuracy: 34.5, satellitesUsed: 8, source: .gpsd),
            LocationFix(mode: 2, time: FixTime(seconds: 1_789_999_990, nanoseconds: 0), latitude: 1, longitude: -0.000001, source: .gpsd),
            LocationFix(mode: 3, time: FixTime(seconds: 1_789_999_999, nanoseconds: 999_000_000),
                   latitude: -33.868820000000007, longitude: 151.20929, altitude: -12, speed: 0, course: 359.99999,
                   horizontalAccuracy: 1e-3, verticalAccuracy: 123_456.75, satellitesUsed: 0, source: .gpsd),
        ]
        for fix in fixes {
            let record = try LocationRecord.make(from: fix, now: now)
            let text = String(decoding: record.payload, as: UTF8.self)
            XCTAssertEqual(text, try foundationBytes(record.payload))
            XCTAssertTrue(text.hasPrefix("{\""), text)
        }
    }

    func testMicrophonePayloadIsJSONSerializationsBytes() throws {
        let chunk = AudioChunk(start: Date(timeIntervalSince1970: 1_790_000_000.125), frames: 480_000, overlapFrames: 32_000,
                               sampleRate: 16_000, data: Data([1, 2, 3]))
        let record = try MicrophoneRecord.make(chunk, bitrate: 16_000)
        let text = String(decoding: record.payload, as: UTF8.self)
        XCTAssertEqual(text, try foundationBytes(record.payload))
        XCTAssertTrue(text.contains("\"duration\":30,"), text)
        XCTAssertTrue(text.contains("\"overlap_duration\":2,"), text)
    }
}
