@testable import Capture
import TestRigs
import XCTest

/// What the adaptive bit rate judges sound by: the speech band's level of a frame's quieter
/// half (docs/decisions/0019-sound-is-judged-in-the-speech-band.md).
final class SpeechBandMeterTests: XCTestCase {
    let rate = 16_000
    let frame = 320

    func frames(_ count: Int, from start: Int = 0) -> [Range<Int>] {
        (0 ..< count).map { start + $0 * frame ..< start + ($0 + 1) * frame }
    }

    func levels(_ samples: [Int16], meter: inout SpeechBandMeter) -> [Double] {
        samples.withUnsafeBufferPointer { meter.levels(of: $0, frames: frames(samples.count / frame)) }
    }

    /// A tone in the speech band reads at its level; rumble under 300 Hz (traffic, a fan,
    /// mains hum) reads far under it.
    func testTheSpeechBandPassesAndTheRumbleUnderItDoesNot() {
        var meter = SpeechBandMeter(sampleRate: rate)
        let voice = levels(TestSignal.tone(seconds: 1, dbfs: -30, frequency: 1_000), meter: &meter)
        for level in voice.dropFirst(5) { XCTAssertEqual(level, -30, accuracy: 0.5) }
        meter = SpeechBandMeter(sampleRate: rate)
        let rumble = levels(TestSignal.tone(seconds: 1, dbfs: -30, frequency: 100), meter: &meter)
        // A fourth-order high-pass at 300 Hz: 38 dB down at 100 Hz.
        for level in rumble.dropFirst(5) { XCTAssertLessThan(level, -65) }
        meter = SpeechBandMeter(sampleRate: rate)
        let edge = levels(TestSignal.tone(seconds: 1, dbfs: -30, frequency: 300), meter: &meter)
        for level in edge.dropFirst(5) { XCTAssertEqual(level, -33, accuracy: 0.5, "3 dB down at the cutoff") }
    }

    /// A key's click fills a few milliseconds of one half of a frame: the frame reads as the
    /// quiet half, though its whole level is 20 dB up.
    func testAClickInOneHalfOfAFrameReadsAsTheOtherHalf() {
        var room = TestSignal.noise(seconds: 0.2, dbfs: -60)
        let clickAt = 5 * frame + 40
        for j in 0 ..< 100 {
            let value = Double(room[clickAt + j]) + 6_000 * exp(-Double(j) / 32) * (j % 2 == 0 ? 1 : -1)
            room[clickAt + j] = Int16(max(-32_768, min(32_767, value)))
        }
        var meter = SpeechBandMeter(sampleRate: rate)
        let measured = levels(room, meter: &meter)
        let whole = TestSignal.dbfs(room[5 * frame ..< 6 * frame])
        XCTAssertGreaterThan(whole, -40, "the click lifts the frame's whole level")
        XCTAssertEqual(measured[5], measured[3], accuracy: 3, "the frame reads as its quiet half, the room")
        XCTAssertLessThan(measured[5], -57)
    }

    /// The filter runs on across calls: a stream measured a block at a time reads as the
    /// same stream measured at once, frames cut by a block's end included.
    func testTheFilterRunsOnAcrossBlocks() {
        let speechLike = TestSignal.noise(seconds: 2, dbfs: -40)
        var whole = SpeechBandMeter(sampleRate: rate)
        let atOnce = levels(speechLike, meter: &whole)
        var blocks = SpeechBandMeter(sampleRate: rate)
        var inBlocks: [Double] = []
        for start in stride(from: 0, to: speechLike.count, by: 10 * frame) {
            let block = Array(speechLike[start ..< start + 10 * frame])
            inBlocks += levels(block, meter: &blocks)
        }
        XCTAssertEqual(atOnce.count, inBlocks.count)
        for (a, b) in zip(atOnce, inBlocks) { XCTAssertEqual(a, b, accuracy: 1e-9) }
    }

    /// Digital silence reads as the floor, also after sound (no subnormal tail).
    func testDigitalSilenceReadsAsTheFloor() {
        var meter = SpeechBandMeter(sampleRate: rate)
        _ = levels(TestSignal.tone(seconds: 0.5, dbfs: -10, frequency: 1_000), meter: &meter)
        let after = levels(TestSignal.silence(seconds: 2), meter: &meter)
        XCTAssertEqual(after.last, AudioLevel.floor)
        XCTAssertEqual(after.first.map { $0 < -20 }, true, "the filter's tail is short")
    }
}
