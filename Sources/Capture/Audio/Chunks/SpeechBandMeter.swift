import Foundation

/// The level the adaptive bit rate judges sound by (`BitratePlan`): the speech band's level
/// of a frame's quieter half. The band is everything above `cutoffHz` (a fourth-order
/// Butterworth high-pass, two biquad sections whose state runs on from frame to frame and
/// chunk to chunk); the halves are the frame's first and second 10 ms. Rooms put most of
/// their swells under 300 Hz (traffic, a fan's airflow, the rumble of brown noise) and
/// speech little there, so in the band a passing car hardly moves while a syllable does;
/// a key's click fills a few milliseconds, one half of a frame at most, while a syllable
/// fills both. A frame's `average_db_level` stays its whole level: this is only for the
/// decision. docs/decisions/0019-sound-is-judged-in-the-speech-band.md.
public struct SpeechBandMeter: Sendable, Equatable {
    /// Under the first formant of any voice, over most of a room's rumble.
    public static let cutoffHz = 300.0

    public let sampleRate: Int
    private var first: Biquad
    private var second: Biquad

    public init(sampleRate: Int) {
        self.sampleRate = sampleRate
        // A fourth-order Butterworth high-pass as two second-order sections: the poles' Qs
        // are 1 / (2 cos(π/8)) and 1 / (2 cos(3π/8)).
        let rate = Double(max(1, sampleRate))
        let cutoff = min(Self.cutoffHz, rate / 4)
        first = .highPass(cutoff: cutoff, q: 1 / (2 * cos(Double.pi / 8)), sampleRate: rate)
        second = .highPass(cutoff: cutoff, q: 1 / (2 * cos(3 * Double.pi / 8)), sampleRate: rate)
    }

    /// The level in dBFS of each of `frames` (consecutive ranges of `samples`, in order):
    /// the quieter of its two halves after the high-pass, `AudioLevel.floor` for silence.
    public mutating func levels(of samples: UnsafeBufferPointer<Int16>, frames: [Range<Int>]) -> [Double] {
        frames.map { frame in
            let middle = frame.lowerBound + frame.count / 2
            let first = meanSquare(samples, frame.lowerBound ..< middle)
            let second = meanSquare(samples, middle ..< frame.upperBound)
            return AudioLevel.dbfs(meanSquare: frame.count >= 2 ? min(first, second) : max(first, second))
        }
    }

    /// The filtered samples' mean square over `range` (0 for an empty one).
    private mutating func meanSquare(_ samples: UnsafeBufferPointer<Int16>, _ range: Range<Int>) -> Double {
        guard !range.isEmpty else { return 0 }
        var sum = 0.0
        for index in range {
            let value = second.process(first.process(Double(samples[index])))
            sum += value * value
        }
        return sum / Double(range.count)
    }
}

/// One second-order section, transposed direct form II (the coefficients normalised by a0).
struct Biquad: Sendable, Equatable {
    let b0, b1, b2, a1, a2: Double
    private var z1 = 0.0, z2 = 0.0

    init(b0: Double, b1: Double, b2: Double, a1: Double, a2: Double) {
        (self.b0, self.b1, self.b2, self.a1, self.a2) = (b0, b1, b2, a1, a2)
    }

    /// The high-pass of the Audio EQ Cookbook (R. Bristow-Johnson): the bilinear transform,
    /// prewarped at the cutoff.
    static func highPass(cutoff: Double, q: Double, sampleRate: Double) -> Biquad {
        let w0 = 2 * Double.pi * cutoff / sampleRate
        let alpha = sin(w0) / (2 * q), cosine = cos(w0)
        let a0 = 1 + alpha
        return Biquad(b0: (1 + cosine) / 2 / a0, b1: -(1 + cosine) / a0, b2: (1 + cosine) / 2 / a0,
                      a1: -2 * cosine / a0, a2: (1 - alpha) / a0)
    }

    mutating func process(_ x: Double) -> Double {
        let y = b0 * x + z1
        z1 = b1 * x - a1 * y + z2
        z2 = b2 * x - a2 * y
        // After sound, digital silence would leave the state decaying through subnormal
        // numbers, each step many times slower: far under one LSB, it is zero.
        if abs(z1) < 1e-12, abs(z2) < 1e-12 { (z1, z2) = (0, 0) }
        return y
    }
}
