import Foundation

/// The noises rooms make, synthesised from a seed (the same seed, the same samples), as
/// 16 kHz 16-bit mono at a given level: the RMS over the whole signal in dBFS, as the
/// agent measures it. For the adaptive bit rate's benchmark (`ariata-bench silence
/// --noise`) and the word-error tool (`ariata-bench noise`); docs/streams/microphone.md,
/// "Adaptive bit rate", says what each stands for.
public enum RoomNoise: String, CaseIterable, Sendable {
    /// Flat spectrum: a level that hardly moves from one 20 ms frame to the next.
    case white
    /// 1/f (-3 dB an octave), like many rooms' broadband noise.
    case pink
    /// 1/f² above 20 Hz (-6 dB an octave): most energy below a few hundred hertz, so a
    /// 20 ms frame holds few of its cycles and its level moves by several dB.
    case brown
    /// Mains hum: 50 Hz (or 60) and four harmonics, with a little broadband noise.
    case hum50, hum60
    /// A fan or air conditioner: broadband noise low-passed at about 300 Hz, its blade
    /// tone at 120 Hz, and a slow swell of the airflow.
    case fan
    /// Typing: bursts of key clicks (a 15 ms decaying crack each, 3 to 12 a second, in
    /// bursts of 3 to 10 s with pauses of 2 to 6 s) over quiet pink noise.
    case keyboard
    /// Distant traffic: rumble low-passed at 150 Hz that swells as a car passes (one every
    /// 6 to 15 s, about 5 s wide).
    case traffic

    public static let sampleRate = 16_000

    /// `seconds` of the noise whose RMS is `dbfs`.
    public func samples(seconds: Double, dbfs: Double, seed: UInt64 = 1) -> [Int16] {
        let count = Int((seconds * Double(Self.sampleRate)).rounded())
        var random = SeededRandom(seed: seed &+ UInt64(Self.allCases.firstIndex(of: self) ?? 0) &* 0x9E37_79B9)
        let raw = shape(count, &random)
        let meanSquare = raw.reduce(0.0) { $0 + $1 * $1 } / Double(max(1, raw.count))
        guard meanSquare > 0 else { return [Int16](repeating: 0, count: count) }
        let gain = 32_768 * pow(10, dbfs / 20) / meanSquare.squareRoot()
        return raw.map { Int16(max(-32_768, min(32_767, ($0 * gain).rounded()))) }
    }

    private func shape(_ count: Int, _ random: inout SeededRandom) -> [Double] {
        let rate = Double(Self.sampleRate)
        switch self {
        case .white:
            return (0 ..< count).map { _ in random.uniform() }
        case .pink:
            return Self.pink(count, &random)
        case .brown:
            let pole = exp(-2 * Double.pi * 20 / rate)
            return Self.onePole((0 ..< count).map { _ in random.uniform() }, pole: pole)
        case .hum50, .hum60:
            let fundamental = self == .hum50 ? 50.0 : 60.0
            let amplitudes = [1.0, 0.5, 0.3, 0.2, 0.1]
            return (0 ..< count).map { i in
                let t = Double(i) / rate
                var value = 0.05 * random.uniform()
                for (k, amplitude) in amplitudes.enumerated() {
                    value += amplitude * sin(2 * Double.pi * fundamental * Double(k + 1) * t + Double(k + 1))
                }
                return value
            }
        case .fan:
            let pole = exp(-2 * Double.pi * 300 / rate)
            let air = Self.normalised(Self.onePole(Self.onePole((0 ..< count).map { _ in random.uniform() }, pole: pole), pole: pole))
            return air.indices.map { i in
                let t = Double(i) / rate
                return air[i] * (1 + 0.1 * sin(2 * Double.pi * 0.4 * t)) + 0.3 * sin(2 * Double.pi * 120 * t)
            }
        case .keyboard:
            var signal = Self.normalised(Self.pink(count, &random)).map { $0 * 0.3 }
            let clickLength = Int(0.015 * rate)
            var at = 0
            while at < count {
                let burstEnd = min(count, at + Int(rate * random.between(3, 10)))
                while at < burstEnd {
                    let strength = random.between(6, 12)
                    for j in 0 ..< min(clickLength, count - at) {
                        signal[at + j] += random.uniform() * strength * exp(-Double(j) / (0.002 * rate))
                    }
                    at += Int(rate * random.between(0.08, 0.35))
                }
                at += Int(rate * random.between(2, 6))
            }
            return signal
        case .traffic:
            let pole = exp(-2 * Double.pi * 150 / rate)
            let rumble = Self.normalised(Self.onePole((0 ..< count).map { _ in random.uniform() }, pole: pole))
            var envelope = [Double](repeating: 0.5, count: count)
            var pass = 0.0
            let seconds = Double(count) / rate
            while pass < seconds + 10 {
                pass += random.between(6, 15)
                let first = max(0, Int((pass - 10) * rate)), last = min(count, Int((pass + 10) * rate))
                for i in stride(from: first, to: last, by: 1) {
                    let d = (Double(i) / rate - pass) / 2.5
                    envelope[i] += 1.5 * exp(-0.5 * d * d)
                }
            }
            return rumble.indices.map { rumble[$0] * envelope[$0] }
        }
    }

    /// Paul Kellet's economy pink filter (three poles and zeros, within 0.5 dB of 1/f).
    private static func pink(_ count: Int, _ random: inout SeededRandom) -> [Double] {
        var x1 = 0.0, x2 = 0.0, x3 = 0.0, y1 = 0.0, y2 = 0.0, y3 = 0.0
        return (0 ..< count).map { _ in
            let x0 = random.uniform()
            let out = 0.049922035 * x0 - 0.095993537 * x1 + 0.050612699 * x2 - 0.004408786 * x3
                + 2.494956002 * y1 - 2.017265875 * y2 + 0.522189400 * y3
            (x3, x2, x1) = (x2, x1, x0)
            (y3, y2, y1) = (y2, y1, out)
            return out
        }
    }

    private static func onePole(_ input: [Double], pole: Double) -> [Double] {
        var state = 0.0
        return input.map { state = pole * state + $0; return state }
    }

    private static func normalised(_ input: [Double]) -> [Double] {
        let rms = (input.reduce(0.0) { $0 + $1 * $1 } / Double(max(1, input.count))).squareRoot()
        return rms > 0 ? input.map { $0 / rms } : input
    }
}

/// A 64-bit linear congruential generator (Knuth's MMIX constants, as `TestSignal.noise`):
/// the same seed gives the same numbers on every machine.
struct SeededRandom {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// Uniform in [-1, 1).
    mutating func uniform() -> Double {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Double(state >> 11) / Double(1 << 53) * 2 - 1
    }

    /// Uniform in [low, high).
    mutating func between(_ low: Double, _ high: Double) -> Double { low + (uniform() + 1) / 2 * (high - low) }
}
