import Foundation

/// Raw 16-bit mono test signals at a known level, for the microphone's level and silence
/// tests and measurements: levels are RMS relative to full scale (32768), as the agent
/// measures them (docs/streams/microphone.md, "Loudness and silence").
public enum TestSignal {
    /// Digital silence: every sample 0.
    public static func silence(seconds: Double, sampleRate: Int = 16_000) -> [Int16] {
        [Int16](repeating: 0, count: frames(seconds, sampleRate))
    }

    /// A sine of `frequency` Hz whose RMS is `dbfs` (its peak 3 dB above).
    public static func tone(seconds: Double, dbfs: Double, frequency: Double = 440, sampleRate: Int = 16_000) -> [Int16] {
        let amplitude = 32_768 * pow(10, dbfs / 20) * 2.0.squareRoot()
        return (0 ..< frames(seconds, sampleRate)).map { i in
            clamp(amplitude * sin(2 * Double.pi * frequency * Double(i) / Double(sampleRate)))
        }
    }

    /// White noise, uniform between ±a where a = RMS·√3, whose RMS is `dbfs`: a stand-in
    /// for a quiet room. The same `seed` gives the same samples.
    public static func noise(seconds: Double, dbfs: Double, seed: UInt64 = 0x9E37_79B9_7F4A_7C15, sampleRate: Int = 16_000) -> [Int16] {
        let amplitude = 32_768 * pow(10, dbfs / 20) * 3.0.squareRoot()
        var state = seed
        return (0 ..< frames(seconds, sampleRate)).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let unit = Double(state >> 11) / Double(1 << 53) * 2 - 1
            return clamp(amplitude * unit)
        }
    }

    /// The level of `samples` computed directly (for comparing with the agent's).
    public static func dbfs(_ samples: ArraySlice<Int16>) -> Double {
        guard !samples.isEmpty else { return -.infinity }
        let meanSquare = samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)
        return 10 * log10(meanSquare / (32_768.0 * 32_768.0))
    }

    /// Writes samples as a raw S16_LE file (what the ALSA rig's `file` plugin reads).
    public static func write(_ samples: [Int16], to path: String) throws {
        let data = samples.map(\.littleEndian).withUnsafeBufferPointer { buffer in
            Data(buffer: UnsafeBufferPointer(start: buffer.baseAddress, count: buffer.count))
        }
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    private static func frames(_ seconds: Double, _ sampleRate: Int) -> Int { Int((seconds * Double(sampleRate)).rounded()) }

    private static func clamp(_ value: Double) -> Int16 { Int16(max(-32_768, min(32_767, value.rounded()))) }
}
