import AgentCore
import Capture
import Foundation
import Rigs

/// `ariata-bench encode --input X.raw --output Y.opus [--bitrate B] [--quiet-bitrate Q]
/// [--sound-threshold-db D]`: a raw PCM file (16 kHz mono, signed 16-bit little-endian)
/// encoded by the agent's own encoder (`OggOpusChunkEncoder`, the settings the microphone
/// stream gives it) into one Ogg Opus file, handed over in 2 s blocks like the capture
/// thread's reads (the bit-rate plan's look-ahead sees one block at a time). One chunk for
/// the whole file, its plan (the room's floor, the hold) carried through as the stream's chunks carry it. For the
/// word-error-rate benchmark (tools/wer), which decodes the file and feeds it to a recogniser.
enum EncodeBench {
    static func run(input: String, output: String, bitrate: Int, quietBitrate: Int, soundThresholdDB: Int,
                    soundMarginDB: Int = MicrophoneConfig().soundMarginDB, quietRoom: QuietRoom = MicrophoneConfig().quietRoom) throws {
        let samples = try SpeechInput.samples(ofRawFile: input)
        guard !samples.isEmpty else { throw BenchFailure("\(input) holds no samples") }
        let config = MicrophoneConfig()
        let settings = OggOpusChunkEncoder.Settings(
            sampleRate: 16_000, bitrate: bitrate, complexity: config.complexity,
            adaptive: .init(quietBitrate: quietBitrate, soundThresholdDB: Double(soundThresholdDB), soundMarginDB: Double(soundMarginDB),
                            quietRoom: quietRoom))
        let encoder = try OggOpusChunkEncoder(settings)
        let block = 32_000 // 2 s at 16 kHz
        try samples.withUnsafeBufferPointer { all in
            var start = 0
            while start < all.count {
                let end = min(all.count, start + block)
                try encoder.append(UnsafeBufferPointer(rebasing: all[start ..< end]))
                start = end
            }
        }
        let mean = encoder.meanBitrate ?? bitrate
        let data = try encoder.finish()
        try data.write(to: URL(fileURLWithPath: output))
        print(String(format: "%@: %.1f s, %d bytes (%.2f kbit/s), mean rate %d bit/s, %d rate changes",
                     output, Double(samples.count) / 16_000, data.count, Double(data.count) * 8 / (Double(samples.count) / 16_000) / 1_000,
                     mean, max(0, encoder.rateChanges.count - 1)))
    }
}
