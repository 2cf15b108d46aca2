import AgentCore
import Foundation

/// One finished chunk: its encoded file and where it sits on the capture timeline.
public struct AudioChunk: Sendable, Equatable {
    /// The record id of the chunk (and the name of its journal).
    public var id: UUID
    /// Capture time of the chunk's first sample.
    public var start: Date
    /// Samples in the chunk.
    public var frames: Int
    /// Leading samples that are the same audio as the end of the previous chunk (0 for the
    /// first chunk after the capture started, resumed or lost samples).
    public var overlapFrames: Int
    public var sampleRate: Int
    /// The encoded file (Ogg Opus for the stream).
    public var data: Data
    /// The level of the chunk's samples (its overlap included: it is in the file), gathered
    /// as they were captured; nil for a chunk recovered from the audio journal, whose
    /// samples are gone.
    public var level: AudioLevel?
    /// The mean bit rate the chunk was encoded at (`ChunkEncoder.meanBitrate`); nil when
    /// not known (a chunk recovered from the audio journal).
    public var bitrate: Int?

    public init(id: UUID = RecordID.make(), start: Date, frames: Int, overlapFrames: Int, sampleRate: Int, data: Data,
                level: AudioLevel? = nil, bitrate: Int? = nil) {
        self.bitrate = bitrate
        self.id = id
        self.start = start
        self.frames = frames
        self.overlapFrames = overlapFrames
        self.sampleRate = sampleRate
        self.data = data
        self.level = level
    }

    public var duration: TimeInterval { Double(frames) / Double(sampleRate) }
    public var overlapDuration: TimeInterval { Double(overlapFrames) / Double(sampleRate) }
    public var end: Date { start.addingTimeInterval(duration) }
}
