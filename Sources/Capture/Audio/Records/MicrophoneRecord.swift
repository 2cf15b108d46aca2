import AgentCore
import Foundation

/// The `microphone` record of the ingest contract for one chunk.
public enum MicrophoneRecord {
    /// The record carries the chunk's id, so a chunk recovered from the audio journal after
    /// a crash is recognised when it is already in the queue.
    ///
    /// The audio is the record's attachment (`audio_data`): the queue keeps it as a file of
    /// its own and the payload gets its base64 only when it is read for a request.
    /// `journalFile`, the chunk's journal when it holds exactly the chunk's bytes, is linked
    /// into the queue's store rather than written a second time.
    ///
    /// A chunk whose level is known carries `average_db_level` and `is_silent` (below
    /// `silenceThresholdDB`), as the successor iOS collector sends them; one recovered from
    /// the journal has neither (its samples are gone).
    ///
    /// `bitrate` is the configured rate for sound; the record says the chunk's mean rate
    /// when the chunk knows it (an adaptive rate changes within a chunk), and with
    /// `adaptive` the settings behind it in `metadata` (docs/streams/microphone.md,
    /// "Adaptive bit rate").
    public static func make(_ chunk: AudioChunk, bitrate: Int, adaptive: AdaptiveRate? = nil,
                            silenceThresholdDB: Int = MicrophoneConfig().silenceThresholdDB,
                            journalFile: String? = nil) throws -> NewRecord {
        var fields: [String: any Sendable] = [
            "timestamp_start": RFC3339.string(from: chunk.start),
            "timestamp_end": RFC3339.string(from: chunk.end),
            "duration": chunk.duration,
            // What both servers' transforms read for a chunk's length (transcription uses it).
            "duration_seconds": chunk.duration,
            "overlap_duration": chunk.overlapDuration,
            "audio_format": "ogg",
            "sample_rate": chunk.sampleRate,
            "channels": 1,
            "codec": "opus",
            "bitrate": chunk.bitrate ?? bitrate,
        ]
        if let adaptive {
            fields["metadata"] = [
                "bitrate": bitrate,
                "quiet_bitrate": adaptive.quietBitrate,
                "sound_threshold_db": adaptive.soundThresholdDB,
                "sound_margin_db": adaptive.soundMarginDB,
                "quiet_room": adaptive.quietRoom.rawValue,
            ] as [String: any Sendable]
        }
        if let level = chunk.level {
            fields["average_db_level"] = level.reported
            // With the mean, what a Virtues box's own app judges silence by (docs/upload.md).
            fields["peak_db_level"] = level.reportedPeak
            fields["is_silent"] = level.isSilent(thresholdDB: silenceThresholdDB)
        }
        var record = try NewRecord(id: chunk.id, stream: .microphone, capturedAt: chunk.start, fields: fields)
        record.attachment = RecordAttachment(field: audioField, data: chunk.data, fileExtension: "ogg", existingFile: journalFile)
        return record
    }

    /// The settings of the level-adaptive rate a chunk was encoded with.
    public struct AdaptiveRate: Sendable, Equatable {
        public var quietBitrate: Int
        public var soundThresholdDB: Int
        public var soundMarginDB: Int
        public var quietRoom: QuietRoom

        public init(quietBitrate: Int, soundThresholdDB: Int, soundMarginDB: Int = MicrophoneConfig().soundMarginDB,
                    quietRoom: QuietRoom = MicrophoneConfig().quietRoom) {
            self.quietBitrate = quietBitrate
            self.quietRoom = quietRoom
            self.soundThresholdDB = soundThresholdDB
            self.soundMarginDB = soundMarginDB
        }

        /// The settings `[microphone]` gives.
        public init(microphone config: MicrophoneConfig) {
            self.init(quietBitrate: config.quietBitrate, soundThresholdDB: config.soundThresholdDB,
                      soundMarginDB: config.soundMarginDB, quietRoom: config.quietRoom)
        }
    }

    /// The contract's field for a chunk's Ogg Opus bytes (base64).
    public static let audioField = "audio_data"
}
