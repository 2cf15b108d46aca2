import AgentCore
import Foundation

/// The records tests put in a queue, each kind built in one place.
public enum TestRecords {
    /// A record whose payload is a JSON string of exactly `bytes` bytes (at least the two
    /// quotes): for tests that count records and bytes, not fields.
    public static func sized(_ stream: StreamName, bytes: Int, at time: Date) -> NewRecord {
        NewRecord(stream: stream, capturedAt: time, payload: Data("\"\(String(repeating: "x", count: max(0, bytes - 2)))\"".utf8))
    }

    /// A location record with a position and nothing else.
    public static func fix(at time: Date) throws -> NewRecord {
        try NewRecord(stream: .location, capturedAt: time, fields: ["latitude": 52.5, "longitude": 13.4])
    }

    /// A record of `stream` with every field its stream writes (docs/upload.md), the
    /// microphone's audio inline as base64 (`audioBytes` of `fakeOgg`).
    public static func realistic(_ stream: StreamName, at time: Date, audioBytes: Int = 2_000) throws -> NewRecord {
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

    /// Bytes that start like an Ogg page (the receiver checks the magic), then noise.
    public static func fakeOgg(bytes: Int) -> Data {
        var data = Data("OggS".utf8)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        while data.count < bytes {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            data.append(UInt8(truncatingIfNeeded: state >> 33))
        }
        return data
    }

    /// `bytes` that do not compress, as an Opus chunk's; another `seed` gives other bytes.
    public static func incompressibleAudio(bytes: Int = 60_000, seed: Int = 0) -> Data {
        Data((0..<bytes).map { UInt8(truncatingIfNeeded: ($0 &+ seed) &* 2_654_435_761 >> 13) })
    }
}
