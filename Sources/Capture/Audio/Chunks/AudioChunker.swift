import Foundation

/// Cuts a run of continuous audio into chunks of `chunkFrames` where each chunk begins
/// `overlapFrames` before the previous one ended, feeding each chunk's samples to its own
/// encoder as they arrive (so at most two encoders are open, and only during an overlap)
/// and gathering each chunk's level (`AudioLevel`) on the way.
///
/// Time: a run starts at the capture time of its first sample and every later sample's time
/// is counted forward from it by the sample rate, so chunks do not drift apart over hours.
/// `retime` moves the timeline for chunks not yet begun (the wall clock was set, or the
/// sound card's clock drifted) without touching the audio.
///
/// Pure logic: no device, no clock, no thread.
public struct AudioChunker<Encoder: ChunkEncoder> {
    public let sampleRate: Int
    public let chunkFrames: Int
    public let overlapFrames: Int
    private let makeEncoder: ChunkEncoderFactory<Encoder>

    private struct OpenChunk {
        var encoder: Encoder
        var beginning: ChunkBeginning
        var frames: Int
        var endFrame: Int64
        var level = AudioLevel()
    }

    /// The time of frame `originFrame`; nil between runs.
    private var origin: (time: Date, frame: Int64)?
    /// Frames fed since the chunker was made.
    private var position: Int64 = 0
    /// Where the next chunk begins.
    private var nextStartFrame: Int64 = 0
    /// Whether the next chunk follows one of the same run (and so overlaps it).
    private var followsChunk = false
    private var open: [OpenChunk] = []

    public init(sampleRate: Int, chunkFrames: Int, overlapFrames: Int, makeEncoder: @escaping ChunkEncoderFactory<Encoder>) {
        precondition(sampleRate > 0 && chunkFrames > 0 && overlapFrames >= 0 && overlapFrames < chunkFrames,
                     "the config reader guarantees 0 <= overlap < chunk")
        self.sampleRate = sampleRate
        self.chunkFrames = chunkFrames
        self.overlapFrames = overlapFrames
        self.makeEncoder = makeEncoder
    }

    public var isRunning: Bool { origin != nil }

    /// The capture time of the next sample by the sample count; nil between runs.
    public var nextFrameTime: Date? {
        origin.map { time(ofFrame: position, origin: $0) }
    }

    /// Starts a run of continuous audio whose next sample was captured at `time`.
    /// A run in progress is finished first; its chunks are returned.
    public mutating func begin(at time: Date) throws -> [AudioChunk] {
        let finished = try finish()
        origin = (time, position)
        nextStartFrame = position
        followsChunk = false
        return finished
    }

    /// From the next sample on, count time from `time`. Chunks already begun keep their
    /// start; the next chunk begins on the new timeline.
    public mutating func retime(nextFrameAt time: Date) {
        guard origin != nil else { return }
        origin = (time, position)
    }

    /// Feeds samples of the current run; returns the chunks they completed.
    public mutating func append(_ samples: UnsafeBufferPointer<Int16>) throws -> [AudioChunk] {
        guard let origin else {
            preconditionFailure("append before begin: the stream anchors every run")
        }
        var finished: [AudioChunk] = []
        var offset = 0
        while offset < samples.count {
            if position == nextStartFrame {
                let beginning = ChunkBeginning(start: time(ofFrame: position, origin: origin),
                                               overlapFrames: followsChunk ? overlapFrames : 0,
                                               sampleRate: sampleRate)
                open.append(OpenChunk(encoder: try makeEncoder(beginning), beginning: beginning, frames: 0,
                                      endFrame: position + Int64(chunkFrames)))
                nextStartFrame = position + Int64(chunkFrames - overlapFrames)
                followsChunk = true
            }
            let nextEvent = open.reduce(nextStartFrame) { min($0, $1.endFrame) }
            let count = Int(min(Int64(samples.count - offset), nextEvent - position))
            let slice = UnsafeBufferPointer(rebasing: samples[offset ..< offset + count])
            var level = AudioLevel()
            level.add(slice)
            for index in open.indices {
                try open[index].encoder.append(slice)
                open[index].frames += count
                open[index].level.add(level)
            }
            offset += count
            position += Int64(count)
            while let first = open.first, first.endFrame == position {
                finished.append(try close(open.removeFirst()))
            }
        }
        return finished
    }

    /// Ends the run: the chunk in progress is finished short. A chunk that holds nothing
    /// but the overlap (the run ended inside an overlap) is dropped: its audio is all in
    /// the previous chunk.
    public mutating func finish() throws -> [AudioChunk] {
        defer {
            open.removeAll()
            origin = nil
            followsChunk = false
        }
        var finished: [AudioChunk] = []
        for chunk in open where chunk.frames > chunk.beginning.overlapFrames {
            finished.append(try close(chunk))
        }
        return finished
    }

    private func close(_ chunk: OpenChunk) throws -> AudioChunk {
        var encoder = chunk.encoder
        let data = try encoder.finish()
        return AudioChunk(id: chunk.beginning.id, start: chunk.beginning.start, frames: chunk.frames,
                          overlapFrames: chunk.beginning.overlapFrames, sampleRate: sampleRate,
                          data: data, level: chunk.level, bitrate: encoder.meanBitrate)
    }

    private func time(ofFrame frame: Int64, origin: (time: Date, frame: Int64)) -> Date {
        // From the origin each time rather than by adding up durations, so no rounding builds up.
        origin.time.addingTimeInterval(Double(frame - origin.frame) / Double(sampleRate))
    }
}
