import Foundation

/// Turns the samples of one chunk into the chunk's bytes. One encoder per chunk: each chunk
/// must be playable on its own, so no state is shared between chunks.
public protocol ChunkEncoder {
    /// Encodes the next samples of the chunk.
    mutating func append(_ samples: UnsafeBufferPointer<Int16>) throws
    /// Ends the chunk and returns the complete file. Called once.
    mutating func finish() throws -> Data
}

/// Makes the encoder of the next chunk.
public typealias ChunkEncoderFactory<Encoder: ChunkEncoder> = () throws -> Encoder
