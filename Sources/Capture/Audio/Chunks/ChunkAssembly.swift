import AgentCore
import Foundation
import Logging
import Platform

/// Chunk assembly: cuts the captured audio into overlapping chunks (`AudioChunker`), times
/// them (the sample count, the wall clock again when they part by more than
/// `MicrophoneTuning.maxClockSkew`, and provisional times: `ChunkTimes`), and gives each
/// chunk its journal as it begins (`JournaledEncoderMaker`). It returns the chunks it
/// finished; an encoder failure loses the chunks in progress, not the stream.
///
/// Capture thread only.
struct ChunkAssembly {
    /// A finished chunk and its provisional time (nil when its time can be believed).
    struct Finished {
        var chunk: AudioChunk
        var provisional: ProvisionalTime?
    }

    private var chunker: AudioChunker<OggOpusChunkEncoder>
    private let times: ChunkTimes
    private let journal: ChunkJournal
    private let clock: any WallClock
    private let maxClockSkew: TimeInterval?
    private let logger: Logger

    init(config: MicrophoneConfig, tuning: MicrophoneTuning, clock: any WallClock, clockTrust: ClockTrust,
         journal: ChunkJournal, logger: Logger) {
        let rate = tuning.sampleRate
        let settings = OggOpusChunkEncoder.Settings(microphone: config, sampleRate: rate)
        times = ChunkTimes(trust: clockTrust)
        chunker = AudioChunker(sampleRate: rate, chunkFrames: config.chunkSeconds * rate, overlapFrames: config.overlapSeconds * rate,
                               makeEncoder: JournaledEncoderMaker(settings: settings, times: times, journal: journal).make)
        self.journal = journal
        self.clock = clock
        self.maxClockSkew = tuning.maxClockSkew
        self.logger = logger
    }

    /// Hands a block just read to the chunker, timed from the wall clock less what the
    /// device still holds (`pending` frames): a run begins there, and one whose sample
    /// count has parted from the clock by more than `maxClockSkew` follows the clock again.
    /// Returns the chunks it finished.
    mutating func append(_ block: UnsafeBufferPointer<Int16>, pending: Int) -> [Finished] {
        let lag = Double(pending + block.count) / Double(chunker.sampleRate)
        let now = clock.now()
        let firstSampleTime = now.addingTimeInterval(-lag)
        var finished: [Finished] = []
        if !chunker.isRunning {
            finished += step { try $0.begin(at: firstSampleTime) } ?? []
            times.anchored(now: now, lag: lag)
        } else if let maxClockSkew, let counted = chunker.nextFrameTime,
                  abs(counted.timeIntervalSince(firstSampleTime)) > maxClockSkew {
            logger.info("microphone timestamps follow the wall clock again",
                        metadata: ["skew_seconds": "\(counted.timeIntervalSince(firstSampleTime))"])
            chunker.retime(nextFrameAt: firstSampleTime)
            times.anchored(now: now, lag: lag)
        }
        guard let appended = step({ try $0.append(block) }) else {
            // The encoders' state is unknown after a failure: drop the run, the next block
            // starts a new one.
            for dropped in (try? chunker.finish()) ?? [] {
                journal.remove(dropped.id)
                _ = times.take(dropped.id)
            }
            return finished
        }
        return finished + appended
    }

    /// Whether a run is in progress (a chunk is open or about to begin).
    var isRunning: Bool { chunker.isRunning }

    /// When a block of `count` frames just read was captured, the device still holding
    /// `pending` more: on the run's timeline while one is in progress, else by the wall
    /// clock, as `append` would time it.
    func times(of count: Int, pending: Int) -> (start: Date, end: Date) {
        let rate = Double(chunker.sampleRate)
        let start = chunker.nextFrameTime ?? clock.now().addingTimeInterval(-Double(pending + count) / rate)
        return (start, start.addingTimeInterval(Double(count) / rate))
    }

    /// Ends the run: the chunk in progress is finished short (an overrun, a switch of
    /// device, a stop). Returns the chunks it finished.
    mutating func endRun() -> [Finished] {
        step { try $0.finish() } ?? []
    }

    /// Runs a chunker step and gives each chunk it finished its time. An encoder failure
    /// loses the chunks in progress, not the stream: logged, nil.
    private mutating func step(_ run: (inout AudioChunker<OggOpusChunkEncoder>) throws -> [AudioChunk]) -> [Finished]? {
        do {
            return try run(&chunker).map { Finished(chunk: $0, provisional: times.take($0.id)) }
        } catch {
            logger.error("microphone chunk lost: encoding failed", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
