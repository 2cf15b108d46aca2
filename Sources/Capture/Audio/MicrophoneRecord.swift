import AgentCore
import Foundation

/// The `microphone` record of the ingest contract for one chunk.
public enum MicrophoneRecord {
    /// The record carries the chunk's id, so a chunk recovered from the audio journal after
    /// a crash is recognised when it is already in the queue.
    public static func make(_ chunk: AudioChunk, bitrate: Int) throws -> NewRecord {
        try NewRecord(id: chunk.id, stream: .microphone, capturedAt: chunk.start, fields: [
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
