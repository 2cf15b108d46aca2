import Capture
import Foundation
import XCTest

/// An encoder that keeps the raw samples, so chunk contents can be compared exactly.
struct PCMEncoder: ChunkEncoder {
    var samples: [Int16] = []
    mutating func append(_ block: UnsafeBufferPointer<Int16>) throws { samples.append(contentsOf: block) }
    mutating func finish() throws -> Data { samples.withUnsafeBytes { Data($0) } }
}

final class AudioChunkerTests: XCTestCase {
    let rate = 100 // frames per second: small numbers, same logic
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func makeChunker(chunk: Int = 30, overlap: Int = 2) -> AudioChunker<PCMEncoder> {
        AudioChunker(sampleRate: rate, chunkFrames: chunk * rate, overlapFrames: overlap * rate, makeEncoder: { _ in PCMEncoder() })
    }

    /// A ramp, so every sample says where it came from.
    func ramp(_ range: Range<Int>) -> [Int16] { range.map { Int16(truncatingIfNeeded: $0) } }

    func feed(_ chunker: inout AudioChunker<PCMEncoder>, _ samples: [Int16], block: Int) throws -> [AudioChunk] {
        var out: [AudioChunk] = []
        var offset = 0
        while offset < samples.count {
            let end = min(offset + block, samples.count)
            out += try samples[offset ..< end].withUnsafeBufferPointer { try chunker.append($0) }
            offset = end
        }
        return out
    }

    func samples(_ chunk: AudioChunk) -> [Int16] {
        chunk.data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    func testNinetyFiveSecondsGiveChunksEvery28SecondsAndAShortLastOne() throws {
        var chunker = makeChunker()
        XCTAssertTrue(try chunker.begin(at: t0).isEmpty)
        let input = ramp(0 ..< 95 * rate)
        // An odd block size, so boundaries fall inside blocks.
        var chunks = try feed(&chunker, input, block: 37)
        XCTAssertEqual(chunks.count, 3, "three full chunks end by 86 s")
        chunks += try chunker.finish()
        XCTAssertEqual(chunks.map { $0.start.timeIntervalSince(t0) }, [0, 28, 56, 84])
        XCTAssertEqual(chunks.map(\.duration), [30, 30, 30, 11])
        XCTAssertEqual(chunks.map(\.overlapDuration), [0, 2, 2, 2])
        for (index, chunk) in chunks.enumerated() {
            let start = index * 28 * rate
            XCTAssertEqual(samples(chunk), Array(input[start ..< min(start + 30 * rate, input.count)]), "chunk \(index) holds its stretch of input")
        }
        for (previous, next) in zip(chunks, chunks.dropFirst()) {
            XCTAssertEqual(Array(samples(previous).suffix(2 * rate)), Array(samples(next).prefix(2 * rate)),
                           "a chunk begins with the samples the previous one ended with")
            XCTAssertEqual(next.start, previous.end.addingTimeInterval(-2))
        }
    }

    func testTimestampsAreCountedBySamplesNotAddedUp() throws {
        var chunker = makeChunker(chunk: 7, overlap: 1)
        _ = try chunker.begin(at: t0)
        // 1000 chunks of 6 s of new audio at 100 Hz: any per-chunk rounding would show.
        var chunks: [AudioChunk] = []
        let block = [Int16](repeating: 1, count: 6 * rate)
        for _ in 0 ..< 1_000 {
            chunks += try block.withUnsafeBufferPointer { try chunker.append($0) }
        }
        XCTAssertEqual(chunks.count, 999)
        XCTAssertEqual(chunks.last?.start.timeIntervalSince(t0) ?? 0, 998 * 6, accuracy: 1e-6)
    }

    func testStopInsideAnOverlapDropsTheChunkThatHoldsOnlyOverlap() throws {
        var chunker = makeChunker()
        _ = try chunker.begin(at: t0)
        var chunks = try feed(&chunker, ramp(0 ..< 29 * rate), block: 500)
        XCTAssertTrue(chunks.isEmpty)
        chunks += try chunker.finish()
        XCTAssertEqual(chunks.map(\.duration), [29], "the partial chunk is written; the next one, all overlap, is not")
        XCTAssertFalse(chunker.isRunning)
    }

    func testStopJustAfterABoundaryWritesTheNewAudio() throws {
        var chunker = makeChunker()
        _ = try chunker.begin(at: t0)
        var chunks = try feed(&chunker, ramp(0 ..< 31 * rate), block: 500)
        chunks += try chunker.finish()
        XCTAssertEqual(chunks.map(\.duration), [30, 3])
        XCTAssertEqual(chunks.map { $0.start.timeIntervalSince(t0) }, [0, 28])
    }

    func testANewRunStartsWithoutOverlapAtItsOwnTime() throws {
        var chunker = makeChunker()
        _ = try chunker.begin(at: t0)
        _ = try feed(&chunker, ramp(0 ..< 40 * rate), block: 333)
        // Samples were lost (an overrun): the next audio is not continuous with the last.
        let restart = t0.addingTimeInterval(45)
        let ended = try chunker.begin(at: restart)
        XCTAssertEqual(ended.map(\.duration), [12], "the chunk in progress ends where the audio broke")
        var chunks = try feed(&chunker, ramp(0 ..< 31 * rate), block: 333)
        chunks += try chunker.finish()
        XCTAssertEqual(chunks.map(\.start), [restart, restart.addingTimeInterval(28)])
        XCTAssertEqual(chunks.map(\.overlapDuration), [0, 2])
    }

    func testRetimeMovesOnlyChunksNotYetBegun() throws {
        var chunker = makeChunker()
        _ = try chunker.begin(at: t0)
        var chunks = try feed(&chunker, ramp(0 ..< 10 * rate), block: 100)
        // The wall clock was stepped forward by an hour (NTP) ten seconds in.
        let stepped = t0.addingTimeInterval(3_600 + 10)
        chunker.retime(nextFrameAt: stepped)
        XCTAssertEqual(chunker.nextFrameTime, stepped)
        chunks += try feed(&chunker, ramp(0 ..< 50 * rate), block: 100)
        chunks += try chunker.finish()
        XCTAssertEqual(chunks.map { $0.start.timeIntervalSince(t0) }, [0, 3_628, 3_656])
        XCTAssertEqual(chunks.map(\.duration), [30, 30, 4])
    }

    func testNoOverlap() throws {
        var chunker = makeChunker(chunk: 10, overlap: 0)
        _ = try chunker.begin(at: t0)
        let input = ramp(0 ..< 25 * rate)
        var chunks = try feed(&chunker, input, block: 77)
        chunks += try chunker.finish()
        XCTAssertEqual(chunks.map { $0.start.timeIntervalSince(t0) }, [0, 10, 20])
        XCTAssertEqual(chunks.map(\.duration), [10, 10, 5])
        XCTAssertEqual(chunks.flatMap(samples), input, "every sample exactly once")
    }
}
