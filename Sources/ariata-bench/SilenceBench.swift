import AgentCore
import Capture
import Foundation
import Logging
import Rigs

/// `ariata-bench silence [--seconds N] [--quiet-percent P] [--dir D]`: each chunk's level
/// (`average_db_level`) and what `[microphone] silence_threshold_db` (default -50 dBFS)
/// marks silent, for speech (tools/demo/speech.opus, decoded by opusdec), the same speech
/// 30 dB quieter (a speaker far from the microphone), room-like noise at -45 and -60 dBFS
/// and digital silence, each N seconds through the ALSA file plugin and the real stream
/// with the default config; then an hour that is P % quiet (five-minute spells: room noise
/// at -60 dBFS, then speech) captured twice, with `upload_silent` true and false, and the
/// audio bytes stored by each: what dropping silent chunks saves per hour.
enum SilenceBench {
    struct Chunks {
        var levels: [Double]
        var silent: Int
        var audioBytes: Int
        var dropped: Int
    }

    static func run(seconds: Int, quietPercent: Int, work directory: WorkDirectoryOption) throws {
        let work = try directory.workDirectory("silence")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let threshold = MicrophoneConfig().silenceThresholdDB
        let speech = try decodeSpeech(in: work)
        print("threshold: \(threshold) dBFS (default); 30 s chunks overlapping by 2 s; levels are RMS dBFS per chunk (min / median / max)")

        let inputs: [(String, (Int) -> [Int16])] = [
            ("speech (tools/demo/speech.opus)", { repeated(speech, $0) }),
            ("the same speech 30 dB quieter", { repeated(speech.map { Int16((Double($0) * pow(10, -30.0 / 20)).rounded()) }, $0) }),
            ("room noise at -45 dBFS", { TestSignal.noise(seconds: Double($0), dbfs: -45) }),
            ("room noise at -60 dBFS", { TestSignal.noise(seconds: Double($0), dbfs: -60) }),
            ("digital silence", { TestSignal.silence(seconds: Double($0)) }),
        ]
        for (name, make) in inputs {
            let path = "\(work)/input.raw"
            try TestSignal.write(make(seconds + 5), to: path)
            let chunks = try capture(path, seconds: seconds, uploadSilent: true, in: work)
            let sorted = chunks.levels.sorted()
            print(String(format: "%@: %d chunks, level %.1f / %.1f / %.1f dBFS, %d silent at %d dBFS, %.0f bytes per chunk",
                         name, sorted.count, sorted.first ?? .nan, sorted.isEmpty ? .nan : sorted[sorted.count / 2],
                         sorted.last ?? .nan, chunks.silent, threshold,
                         Double(chunks.audioBytes) / Double(max(1, sorted.count))))
        }

        // What gathering the level costs: the same loop the stream runs on every block.
        let block = repeated(speech, 2)
        let cpuStart = AudioBench.cpu(RUSAGE_SELF.rawValue)
        var level = AudioLevel()
        for _ in 0 ..< 1_800 { block.withUnsafeBufferPointer { level.add($0) } } // an hour of 2 s blocks
        let cpuEnd = AudioBench.cpu(RUSAGE_SELF.rawValue)
        print(String(format: "gathering the level: %.1f ms CPU per hour of audio (one hour in 2 s blocks; %.1f dBFS)",
                     (cpuEnd.total - cpuStart.total) * 1_000, level.dbfs))

        // An hour, P % quiet: twelve five-minute spells of room noise then speech.
        let spell = 300, quiet = spell * quietPercent / 100
        let hour = "\(work)/hour.raw"
        guard FileManager.default.createFile(atPath: hour, contents: nil) else { throw BenchFailure("cannot create \(hour)") }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: hour))
        for i in 0 ..< 12 {
            try append(TestSignal.noise(seconds: Double(quiet), dbfs: -60, seed: UInt64(i + 1)), to: handle)
            try append(repeated(speech, spell - quiet), to: handle)
        }
        try append(TestSignal.silence(seconds: 5), to: handle)
        try handle.close()
        let kept = try capture(hour, seconds: 3_600, uploadSilent: true, in: work)
        let dropping = try capture(hour, seconds: 3_600, uploadSilent: false, in: work)
        let saved = kept.audioBytes - dropping.audioBytes
        print("an hour \(quietPercent) % quiet (room noise at -60 dBFS, then speech, in five-minute spells):")
        print(String(format: "  upload_silent = true: %d chunks, %d audio bytes (%d marked silent)", kept.levels.count, kept.audioBytes, kept.silent))
        print(String(format: "  upload_silent = false: %d chunks, %d audio bytes, %d dropped", dropping.levels.count, dropping.audioBytes, dropping.dropped))
        print(String(format: "  saved: %d bytes per hour (%.1f %%), %.1f MB per 24 hours like it (base64 on the wire adds a third)",
                     saved, 100 * Double(saved) / Double(max(1, kept.audioBytes)), Double(saved) * 24 / 1e6))
    }

    /// tools/demo/speech.opus as 16 kHz mono samples (opusdec from opus-tools, then sox).
    static func decodeSpeech(in work: String) throws -> [Int16] {
        let opus = Repository.root + "/tools/demo/speech.opus"
        try AudioBench.runTool("opusdec", ["--quiet", "--rate", "16000", opus, "\(work)/speech.wav"])
        try AudioBench.runTool("sox", ["\(work)/speech.wav", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer",
                                       "-t", "raw", "\(work)/speech.raw"])
        let samples = try SpeechInput.samples(ofRawFile: "\(work)/speech.raw")
        guard !samples.isEmpty else { throw BenchFailure("opusdec and sox produced no audio from \(opus)") }
        return samples
    }

    static func repeated(_ samples: [Int16], _ seconds: Int) -> [Int16] {
        let wanted = seconds * 16_000
        var out: [Int16] = []
        out.reserveCapacity(wanted)
        while out.count < wanted { out += samples.prefix(wanted - out.count) }
        return out
    }

    static func append(_ samples: [Int16], to handle: FileHandle) throws {
        try handle.write(contentsOf: samples.map(\.littleEndian).withUnsafeBufferPointer { Data(buffer: $0) })
    }

    /// The real stream, default config but for `upload_silent`, on `seconds` of `path`.
    static func capture(_ path: String, seconds: Int, uploadSilent: Bool, in work: String) throws -> Chunks {
        let databasePath = "\(work)/queue-\(UUID().uuidString.prefix(8)).sqlite"
        defer { try? FileManager.default.removeItem(atPath: databasePath) }
        let rig = try ALSARig(input: path, device: "ariata_bench_mic")
        defer { withExtendedLifetime(rig) {} }
        let database = try AgentDatabase(path: databasePath)
        var config = MicrophoneConfig()
        config.device = rig.device
        config.uploadSilent = uploadSilent
        let stream = AudioBench.runStream(config: config, database: database, frames: seconds * 16_000)
        var chunks = Chunks(levels: [], silent: 0, audioBytes: 0, dropped: stream.stats().silentChunksDropped)
        for record in try database.recordQueue.records(stream: .microphone) {
            let object = try JSONSerialization.jsonObject(with: record.payload) as? [String: Any]
            chunks.levels.append(object?["average_db_level"] as? Double ?? .nan)
            if object?["is_silent"] as? Bool == true { chunks.silent += 1 }
            chunks.audioBytes += Data(base64Encoded: object?["audio_data"] as? String ?? "")?.count ?? 0
        }
        return chunks
    }
}
