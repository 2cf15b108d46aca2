import AgentCore
import Foundation

/// The `microphone` record of the ingest contract for one chunk.
public enum MicrophoneRecord {
    public static func make(_ chunk: AudioChunk, bitrate: Int, id: UUID = UUID()) throws -> NewRecord {
        try NewRecord(id: id, stream: .microphone, capturedAt: chunk.start, fields: [
            "timestamp_start": RFC3339.string(from: chunk.start),
            "timestamp_end": RFC3339.string(from: chunk.end),
            "duration": chunk.duration,
            "overlap_duration": chunk.overlapDuration,
            "audio_data": chunk.data.base64EncodedString(),
            "audio_format": "ogg",
            "sample_rate": chunk.sampleRate,
            "channels": 1,
            "codec": "opus",
            "bitrate": bitrate,
        ])
    }
}
