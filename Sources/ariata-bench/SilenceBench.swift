import AgentCore
import Capture
import Foundation
import Logging
import Rigs

/// `ariata-bench silence [--seconds N] [--quiet-percent P] [--room-db L] [--settings S]
/// [--day-only] [--dir D]`: each chunk's level (`average_db_level`), what `[microphone]
/// silence_threshold_db` (default -50 dBFS) marks silent and the mean bit rate the default
/// adaptive rate gave it, for speech (tools/demo/speech.opus, decoded by opusdec), the same
/// speech 30 dB quieter (a speaker far from the microphone), room-like noise at -45, -58
/// and -60 dBFS and digital silence, each N seconds through the ALSA file plugin and the
/// real stream with the default config; then an hour that is P % quiet (five-minute
/// spells: room noise at L dBFS, then speech) captured with each of the settings S
/// (`today`: one rate, `adaptive`: the default quiet rate, `adaptive-drop`: the same with
/// `upload_silent = false`), and the Opus bytes and the bytes on the wire each stores,
/// per hour and per day like it. docs/streams/microphone.md, "Adaptive bit rate".
enum SilenceBench {
    struct Chunks {
        var levels: [Double]
        var silent: Int
        var audioBytes: Int
        var dropped: Int
        /// The records as the request body carries them: each one's JSON, its audio as
        /// base64 (a third more), plus the comma between records.
        var wireBytes = 0
        /// The records' `bitrate` (the chunk's mean rate).
        var bitrates: [Int] = []
        /// Seconds of the input in kept chunks, each overlap counted once.
        var coveredSeconds = 0.0
    }

    /// The encoder settings the day is captured with.
    enum Setting: String, CaseIterable {
        case today, adaptive, adaptiveDrop = "adaptive-drop"

        /// `adaptive` is the adaptive settings (`quiet_bitrate`, `sound_threshold_db`) the
        /// two adaptive settings use.
        func apply(to config: inout MicrophoneConfig, adaptive: Adaptive) {
            switch self {
            case .today:
                config.quietBitrate = config.bitrate
            case .adaptive:
                adaptive.apply(to: &config)
            case .adaptiveDrop:
                adaptive.apply(to: &config)
                config.uploadSilent = false
            }
        }

        func description(_ adaptive: Adaptive) -> String {
            switch self {
            case .today: "one rate (quiet_bitrate = bitrate = 16000)"
            case .adaptive: "adaptive (\(adaptive.description))"
            case .adaptiveDrop: "adaptive (\(adaptive.description)), upload_silent = false"
            }
        }
    }

    struct Adaptive {
        var quietBitrate = MicrophoneConfig().quietBitrate
        var soundThresholdDB = MicrophoneConfig().soundThresholdDB
        var soundMarginDB = MicrophoneConfig().soundMarginDB
        var quietRoom = MicrophoneConfig().quietRoom

        func apply(to config: inout MicrophoneConfig) {
            config.quietBitrate = quietBitrate
            config.quietRoom = quietRoom
            config.soundThresholdDB = soundThresholdDB
            config.soundMarginDB = soundMarginDB
        }

        var description: String {
            "quiet_bitrate = \(quietBitrate), sound_threshold_db = \(soundThresholdDB), sound_margin_db = \(soundMarginDB), quiet_room = \(quietRoom.rawValue)"
        }
    }

    static func run(seconds: Int, quietPercent: Int, roomDB: Double, settings: [Setting], adaptive: Adaptive = Adaptive(), dayOnly: Bool,
                    work directory: WorkDirectoryOption) throws {
        let work = try directory.workDirectory("silence")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let speech = try decodeSpeech(in: work)
        if !dayOnly { try levels(seconds: seconds, speech: speech, in: work) }
        try day(quietPercent: quietPercent, roomDB: roomDB, settings: settings, adaptive: adaptive, speech: speech, in: work)
    }

    static func levels(seconds: Int, speech: [Int16], in work: String) throws {
        let threshold = MicrophoneConfig().silenceThresholdDB
        print("threshold: \(threshold) dBFS (default); 30 s chunks overlapping by 2 s; levels are RMS dBFS per chunk (min / median / max); rate: the records' mean bitrate with the default adaptive rate")

        let inputs: [(String, (Int) -> [Int16])] = [
            ("speech (tools/demo/speech.opus)", { repeated(speech, $0) }),
            ("the same speech 30 dB quieter", { repeated(speech.map { Int16((Double($0) * pow(10, -30.0 / 20)).rounded()) }, $0) }),
            ("room noise at -45 dBFS", { TestSignal.noise(seconds: Double($0), dbfs: -45) }),
            ("room noise at -58 dBFS", { TestSignal.noise(seconds: Double($0), dbfs: -58) }),
            ("room noise at -60 dBFS", { TestSignal.noise(seconds: Double($0), dbfs: -60) }),
            ("digital silence", { TestSignal.silence(seconds: Double($0)) }),
        ]
        for (name, make) in inputs {
            let path = "\(work)/input.raw"
            try TestSignal.write(make(seconds + 5), to: path)
            let chunks = try capture(path, seconds: seconds, in: work)
            let sorted = chunks.levels.sorted()
            let rates = chunks.bitrates.sorted()
            print(String(format: "%@: %d chunks, level %.1f / %.1f / %.1f dBFS, %d silent at %d dBFS, %.0f bytes per chunk, rate %d / %d / %d bit/s",
                         name, sorted.count, sorted.first ?? .nan, sorted.isEmpty ? .nan : sorted[sorted.count / 2],
                         sorted.last ?? .nan, chunks.silent, threshold,
                         Double(chunks.audioBytes) / Double(max(1, sorted.count)),
                         rates.first ?? 0, rates.isEmpty ? 0 : rates[rates.count / 2], rates.last ?? 0))
        }

        // What gathering the level costs: the same loop the stream runs on every block.
        let block = repeated(speech, 2)
        let cpuStart = AudioBench.cpu(RUSAGE_SELF.rawValue)
        var level = AudioLevel()
        for _ in 0 ..< 1_800 { block.withUnsafeBufferPointer { level.add($0) } } // an hour of 2 s blocks
        let cpuEnd = AudioBench.cpu(RUSAGE_SELF.rawValue)
        print(String(format: "gathering the level: %.1f ms CPU per hour of audio (one hour in 2 s blocks; %.1f dBFS)",
                     (cpuEnd.total - cpuStart.total) * 1_000, level.dbfs))
        // And what the adaptive rate's own measure costs: the speech band's filter and the
        // frames' halves (`SpeechBandMeter`), per 20 ms frame as the encoder runs it.
        let frames = stride(from: 0, to: block.count, by: 320).map { $0 ..< min(block.count, $0 + 320) }
        var meter = SpeechBandMeter(sampleRate: 16_000)
        var loudest = AudioLevel.floor
        let meterStart = AudioBench.cpu(RUSAGE_SELF.rawValue)
        for _ in 0 ..< 1_800 { block.withUnsafeBufferPointer { loudest = max(loudest, meter.levels(of: $0, frames: frames).max() ?? loudest) } }
        let meterEnd = AudioBench.cpu(RUSAGE_SELF.rawValue)
        print(String(format: "the speech band's level (the adaptive rate's measure): %.1f ms CPU per hour of audio (loudest frame %.1f dBFS)",
                     (meterEnd.total - meterStart.total) * 1_000, loudest))

    }

    /// An hour, P % quiet: twelve five-minute spells of room noise then speech, captured
    /// once per setting. A day is 24 such hours.
    static func day(quietPercent: Int, roomDB: Double, settings: [Setting], adaptive: Adaptive, speech: [Int16], in work: String) throws {
        let spell = 300, quiet = spell * quietPercent / 100
        let hour = "\(work)/hour.raw"
        guard FileManager.default.createFile(atPath: hour, contents: nil) else { throw BenchFailure("cannot create \(hour)") }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: hour))
        for i in 0 ..< 12 {
            try append(TestSignal.noise(seconds: Double(quiet), dbfs: roomDB, seed: UInt64(i + 1)), to: handle)
            try append(repeated(speech, spell - quiet), to: handle)
        }
        try append(TestSignal.silence(seconds: 5), to: handle)
        try handle.close()
        print(String(format: "an hour %d %% quiet (room noise at %.0f dBFS, then speech at -20.8 dBFS, in five-minute spells); a day is 24 of them:",
                     quietPercent, roomDB))
        print("  wire bytes: each record's JSON as the request carries it, its Ogg as base64 (4 bytes per 3) and each chunk's 2 s overlap included; the batch envelope (about 200 bytes a request) is not")
        for setting in settings {
            let cpuStart = AudioBench.cpu(RUSAGE_SELF.rawValue)
            let chunks = try capture(hour, seconds: 3_600, in: work) { setting.apply(to: &$0, adaptive: adaptive) }
            let cpu = AudioBench.cpu(RUSAGE_SELF.rawValue).total - cpuStart.total
            let rates = chunks.bitrates.sorted()
            print(String(format: "  %@: %d chunks kept, %d dropped, %.0f s of the hour's 3600 in kept chunks; Opus %d bytes/hour (%.2f kbit/s), wire %d bytes/hour; per day: Opus %.1f MB, wire %.1f MB; records' bitrate %d / %d / %d; %.1f s CPU",
                         setting.description(adaptive), chunks.levels.count, chunks.dropped, chunks.coveredSeconds, chunks.audioBytes,
                         Double(chunks.audioBytes) * 8 / 3_600 / 1_000, chunks.wireBytes,
                         Double(chunks.audioBytes) * 24 / 1e6, Double(chunks.wireBytes) * 24 / 1e6,
                         rates.first ?? 0, rates.isEmpty ? 0 : rates[rates.count / 2], rates.last ?? 0, cpu))
        }
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

    /// The real stream, default config but for what `change` sets, on `seconds` of `path`.
    static func capture(_ path: String, seconds: Int, in work: String, change: (inout MicrophoneConfig) -> Void = { _ in }) throws -> Chunks {
        let databasePath = "\(work)/queue-\(UUID().uuidString.prefix(8)).sqlite"
        defer { try? FileManager.default.removeItem(atPath: databasePath) }
        let rig = try ALSARig(input: path, device: "ariata_bench_mic")
        defer { withExtendedLifetime(rig) {} }
        let database = try AgentDatabase(path: databasePath)
        var config = MicrophoneConfig()
        config.device = rig.device
        change(&config)
        let stream = AudioBench.runStream(config: config, database: database, frames: seconds * 16_000)
        var chunks = Chunks(levels: [], silent: 0, audioBytes: 0, dropped: stream.stats().silentChunksDropped)
        for record in try database.recordQueue.records(stream: .microphone) {
            let object = try JSONSerialization.jsonObject(with: record.payload) as? [String: Any]
            chunks.levels.append(object?["average_db_level"] as? Double ?? .nan)
            if object?["is_silent"] as? Bool == true { chunks.silent += 1 }
            chunks.audioBytes += Data(base64Encoded: object?["audio_data"] as? String ?? "")?.count ?? 0
            chunks.wireBytes += record.payload.count + 1
            chunks.bitrates.append(object?["bitrate"] as? Int ?? 0)
            let duration = object?["duration"] as? Double ?? 0, overlap = object?["overlap_duration"] as? Double ?? 0
            chunks.coveredSeconds += duration - overlap
        }
        return chunks
    }
}
