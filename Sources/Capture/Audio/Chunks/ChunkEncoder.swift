import AgentCore
import Foundation

/// Turns the samples of one chunk into the chunk's bytes. One encoder per chunk: each chunk
/// must be playable on its own, so no state is shared between chunks.
public protocol ChunkEncoder {
    /// Encodes the next samples of the chunk.
    mutating func append(_ samples: UnsafeBufferPointer<Int16>) throws
    /// Ends the chunk and returns the complete file. Called once.
    mutating func finish() throws -> Data
    /// The mean bit rate the chunk's samples were encoded at (an adaptive rate changes
    /// within a chunk); nil when the encoder does not say.
    var meanBitrate: Int? { get }
}

extension ChunkEncoder {
    public var meanBitrate: Int? { nil }
}

/// What is known about a chunk when it begins: enough for the audio journal to turn a
/// chunk cut off by a crash into a record later.
public struct ChunkBeginning: Sendable, Equatable {
    /// The record id the chunk will carry (also its journal's name).
    public var id: UUID
    /// Capture time of the chunk's first sample.
    public var start: Date
    /// Leading samples shared with the previous chunk.
    public var overlapFrames: Int
    public var sampleRate: Int

    public init(id: UUID = RecordID.make(), start: Date, overlapFrames: Int, sampleRate: Int) {
        self.id = id
        self.start = start
        self.overlapFrames = overlapFrames
        self.sampleRate = sampleRate
    }
}

/// Makes the encoder of the chunk that begins.
public typealias ChunkEncoderFactory<Encoder: ChunkEncoder> = (ChunkBeginning) throws -> Encoder
