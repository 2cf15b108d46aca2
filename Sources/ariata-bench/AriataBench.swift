import AgentCore
import ArgumentParser
import Capture
import Foundation
import Rigs

/// The benchmarks (docs/development.md, Benchmarks; figures in docs/performance.md): one
/// subcommand each, its options declared here, its measurement in its own file. Build
/// them as the package is built (scripts/static-build.sh), so what is measured is what is
/// shipped.
@main
struct AriataBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ariata-bench",
        abstract: "Measure ariata-agent against real components (docs/performance.md).",
        discussion: "Build as the package is built: scripts/static-build.sh ariata-agent ariata-bench.",
        subcommands: [QueueCommand.self, UploadCommand.self, LocationCommand.self, AudioCommand.self, SilenceCommand.self,
                      NoiseCommand.self, EncodeCommand.self, JournalCommand.self, HealthCommand.self, ExportCommand.self, MetricsCommand.self,
                      PowerCommand.self, FootprintCommand.self, SleepCommand.self])
}

struct QueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Enqueue throughput and latency; batch and count times on a large table; bytes per record.")

    @Option(help: "Records in the large table.")
    var records = 1_000_000
    @OptionGroup var work: WorkDirectoryOption

    func validate() throws { try requirePositive(records, "--records") }
    func run() throws { try QueueBench.run(records: records, work: work) }
}

struct UploadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload",
        abstract: "Drain a backlog of audio records to the reference receiver on loopback, against curl posting the same bodies.",
        discussion: "Prints throughput, the resident set while draining, and the agent/curl ratio.")

    @OptionGroup var backlog: BacklogOptions
    @Flag(name: .customLong("no-curl"), help: "Leave out curl's run of the same bodies.")
    var noCurl = false

    func run() throws { try UploadBench.run(backlog, curl: !noCurl) }
}

struct LocationCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "location",
        abstract: "CPU time and wake-ups of the location stream per minute while a real gpsd delivers a fix every second.")

    @Option(help: "How long to measure.")
    var seconds = 60
    @Option(help: "The stream's [location] interval: a record every N seconds.")
    var interval = 10
    @Option(help: "Seconds of fixes before measuring.")
    var warmup = 5
    /// The benchmark's own feeder child (it runs itself with `--feed PATH`).
    @Option(help: .hidden)
    var feed: String?

    func validate() throws {
        try requirePositive(seconds, "--seconds")
        try requirePositive(interval, "--interval")
        try requirePositive(warmup, "--warmup")
    }

    func run() throws {
        try LocationBench.run(.init(seconds: seconds, interval: interval, warmup: warmup, feedPath: feed))
    }
}

struct AudioCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audio",
        abstract: "CPU time to capture and encode speech through the ALSA file plugin into 30 s Ogg Opus chunks, against opusenc; peak RSS.")

    @Option(help: "Seconds of speech (the file plugin reads faster than real time).")
    var seconds = 3_600
    @Option(help: "The Opus encoder's complexity, 0 to 10.")
    var complexity = 10
    @Option(help: "[microphone] quiet_bitrate; 16000 (= bitrate) turns the adaptive rate off. Default: the config's default.")
    var quietBitrate: Int?
    @OptionGroup var work: WorkDirectoryOption

    func validate() throws {
        try requirePositive(seconds, "--seconds")
        try requireWithin(complexity, 0...10, "--complexity")
        if let quietBitrate { try requireWithin(quietBitrate, 2_000...16_000, "--quiet-bitrate") }
    }

    func run() throws { try AudioBench.run(seconds: seconds, complexity: complexity, quietBitrate: quietBitrate, work: work) }
}

struct SilenceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "silence",
        abstract: "Each chunk's level for speech, quiet speech, room noise and digital silence, what the default silence threshold marks silent, and the Opus and wire bytes a day that is mostly quiet costs with one rate, the adaptive rate, and the adaptive rate with upload_silent = false.",
        discussion: """
            Every input goes through the ALSA file plugin and the real microphone stream with the default \
            configuration (30 s chunks, 2 s overlap, silence_threshold_db = -50). The speech is \
            tools/demo/speech.opus decoded with opusdec (opus-tools) and sox; the quiet speech is the same \
            30 dB lower; the room noise is white noise at -45, -58 and -60 dBFS. The hour is twelve five-minute \
            spells, each --quiet-percent of room noise at --room-db and then speech, captured once per \
            --settings: today (quiet_bitrate = bitrate: one rate), adaptive (the defaults), adaptive-drop \
            (the defaults with upload_silent = false). Bytes per day are 24 such hours; wire bytes are the \
            records' JSON with the Ogg as base64, each chunk's 2 s overlap included. \
            With --noise, the noises rooms make instead (white, pink, brown, hum50, hum60, fan, keyboard, \
            traffic): for each noise, --noise-db, --quiet-percent and --speech-db, --spells spells of \
            --spell-seconds (the noise alone, then speech over it) through the stream's chunker and encoder, \
            after 30 s of the noise alone: bytes a day, the share of frames at the quiet rate (coded or \
            comfort noise, --quiet-room) and the speech frames among them (must be 0); --hold-frames \
            measures another hold.
            """)

    @Option(help: "Seconds of each input (the file plugin reads faster than real time).")
    var seconds = 300
    @Option(help: "How much of the hour is quiet, in percent (comma-separated: one day each).")
    var quietPercent = "80"
    @Option(help: "The room noise's level in the hour, dBFS.")
    var roomDb: Double = -58
    @Option(help: "Comma-separated: today, adaptive, adaptive-drop.")
    var settings = "today,adaptive,adaptive-drop"
    @Option(help: "[microphone] quiet_bitrate of the adaptive settings. Default: the config's default.")
    var quietBitrate = MicrophoneConfig().quietBitrate
    @Option(help: "[microphone] sound_threshold_db of the adaptive settings. Default: the config's default.")
    var soundThresholdDb = MicrophoneConfig().soundThresholdDB
    @Option(help: "[microphone] sound_margin_db of the adaptive settings. Default: the config's default.")
    var soundMarginDb = MicrophoneConfig().soundMarginDB
    @Option(help: "[microphone] quiet_room of the adaptive settings: comfort-noise or coded. Default: the config's default.")
    var quietRoom = MicrophoneConfig().quietRoom.rawValue
    @Flag(help: "Only the hour, not each input's levels.")
    var dayOnly = false
    @Option(help: "Comma-separated noises rooms make: white, pink, brown, hum50, hum60, fan, keyboard, traffic (or all); instead of the white-noise inputs and hour.")
    var noise: String?
    @Option(help: "With --noise: the noise's levels, dBFS, comma-separated.")
    var noiseDb = "-60,-55,-50"
    @Option(help: "With --noise: the speech's levels, dBFS, comma-separated.")
    var speechDb = "-20"
    @Option(help: "With --noise: how many spells (noise, then speech) make the stretch measured.")
    var spells = 2
    @Option(help: "With --noise: seconds of each spell.")
    var spellSeconds = 300
    @Option(help: "With --noise: the hold after the last frame of sound, in 20 ms frames (what a shorter hold would save). Default: the stream's.")
    var holdFrames: Int?
    @OptionGroup var work: WorkDirectoryOption

    func validate() throws {
        try requirePositive(seconds, "--seconds")
        for percent in try parsedQuietPercents() { try requireWithin(percent, 0...100, "--quiet-percent") }
        try requireWithin(quietBitrate, 2_000...16_000, "--quiet-bitrate")
        try requireWithin(soundThresholdDb, -100...0, "--sound-threshold-db")
        try requireWithin(soundMarginDb, 0...40, "--sound-margin-db")
        try requirePositive(spells, "--spells")
        try requireWithin(spellSeconds, 10...3_600, "--spell-seconds")
        if let holdFrames { try requireWithin(holdFrames, 0...500, "--hold-frames") }
        _ = try parsedQuietRoom(quietRoom)
        _ = try parsedSettings()
        _ = try parsedNoises()
        _ = try decibels(noiseDb, "--noise-db")
        _ = try decibels(speechDb, "--speech-db")
    }

    func parsedQuietPercents() throws -> [Int] {
        try quietPercent.split(separator: ",").map {
            guard let value = Int($0.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("--quiet-percent: '\($0)' is not a whole number (0 to 100)")
            }
            return value
        }
    }

    func parsedNoises() throws -> [RoomNoise] {
        guard let noise else { return [] }
        if noise == "all" { return RoomNoise.allCases }
        return try noise.split(separator: ",").map {
            guard let kind = RoomNoise(rawValue: $0.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("--noise: '\($0)' is none of \(RoomNoise.allCases.map(\.rawValue).joined(separator: ", ")), all")
            }
            return kind
        }
    }

    func parsedSettings() throws -> [SilenceBench.Setting] {
        try settings.split(separator: ",").map {
            guard let setting = SilenceBench.Setting(rawValue: $0.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("--settings: '\($0)' is none of today, adaptive, adaptive-drop")
            }
            return setting
        }
    }

    func run() throws {
        let adaptive = SilenceBench.Adaptive(quietBitrate: quietBitrate, soundThresholdDB: soundThresholdDb, soundMarginDB: soundMarginDb,
                                             quietRoom: try parsedQuietRoom(quietRoom))
        let noises = try parsedNoises()
        guard noises.isEmpty else {
            try RoomNoiseBench.run(noises: noises, noiseDBs: try decibels(noiseDb, "--noise-db"), quietPercents: try parsedQuietPercents(),
                                   speechDBs: try decibels(speechDb, "--speech-db"), spells: spells, spellSeconds: spellSeconds, holdFrames: holdFrames,
                                   adaptive: adaptive, work: work)
            return
        }
        for (index, percent) in try parsedQuietPercents().enumerated() {
            try SilenceBench.run(seconds: seconds, quietPercent: percent, roomDB: roomDb, settings: try parsedSettings(),
                                 adaptive: adaptive, dayOnly: dayOnly || index > 0, work: work)
        }
    }
}

/// Comma-separated levels in dBFS (0 and below).
/// `--quiet-room`: the values `[microphone] quiet_room` takes.
func parsedQuietRoom(_ value: String) throws -> QuietRoom {
    guard let room = QuietRoom(rawValue: value) else {
        throw ValidationError("--quiet-room: '\(value)' is none of \(QuietRoom.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    return room
}

func decibels(_ list: String, _ option: String) throws -> [Double] {
    try list.split(separator: ",").map {
        guard let value = Double($0.trimmingCharacters(in: .whitespaces)), value <= 0 else {
            throw ValidationError("\(option): '\($0)' is not a level in dBFS (a number, 0 or below)")
        }
        return value
    }
}

struct NoiseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "noise",
        abstract: "Writes one of the noises rooms make as raw PCM (16 kHz mono s16le), the same samples for the same seed.",
        discussion: "The noises of `silence --noise`, for the word-error-rate benchmark (tools/wer/wer.py --noise).")

    @Option(help: "white, pink, brown, hum50, hum60, fan, keyboard or traffic.")
    var kind: String
    @Option(help: "The level (RMS over the whole file), dBFS.")
    var db: Double
    @Option(help: "Seconds of noise.")
    var seconds: Double
    @Option(help: "Seed: the same seed, the same samples.")
    var seed = 1
    @Option(help: "Where the raw PCM goes.")
    var output: String

    func validate() throws {
        guard RoomNoise(rawValue: kind) != nil else {
            throw ValidationError("--kind: '\(kind)' is none of \(RoomNoise.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard db <= 0 else { throw ValidationError("--db: \(db) is above full scale (0 dBFS)") }
        guard seconds > 0 else { throw ValidationError("--seconds must be positive") }
    }

    func run() throws {
        guard let noise = RoomNoise(rawValue: kind) else { return }
        try TestSignal.write(noise.samples(seconds: seconds, dbfs: db, seed: UInt64(max(0, seed))), to: output)
    }
}

struct EncodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encode",
        abstract: "A raw PCM file (16 kHz mono s16le) encoded to Ogg Opus by the agent's own encoder, in 2 s blocks.",
        discussion: """
            The microphone stream's encoder settings (complexity from the default config), one chunk \
            for the whole file. With --quiet-bitrate below --bitrate, the level-adaptive rate; equal, \
            one rate throughout. For the word-error-rate benchmark (tools/wer/wer.py).
            """)

    @Option(help: "Raw PCM: 16 kHz, mono, signed 16-bit little-endian.")
    var input: String
    @Option(help: "Where the Ogg Opus file goes.")
    var output: String
    @Option(help: "[microphone] bitrate.")
    var bitrate = MicrophoneConfig().bitrate
    @Option(help: "[microphone] quiet_bitrate; equal to --bitrate for one rate throughout. Default: the config's default.")
    var quietBitrate = MicrophoneConfig().quietBitrate
    @Option(help: "[microphone] sound_threshold_db. Default: the config's default.")
    var soundThresholdDb = MicrophoneConfig().soundThresholdDB
    @Option(help: "[microphone] sound_margin_db. Default: the config's default.")
    var soundMarginDb = MicrophoneConfig().soundMarginDB
    @Option(help: "[microphone] quiet_room: comfort-noise or coded. Default: the config's default.")
    var quietRoom = MicrophoneConfig().quietRoom.rawValue

    func validate() throws {
        _ = try parsedQuietRoom(quietRoom)
        try requireWithin(soundMarginDb, 0...40, "--sound-margin-db")
        try requireWithin(bitrate, 2_000...64_000, "--bitrate")
        try requireWithin(quietBitrate, 2_000...64_000, "--quiet-bitrate")
        try requireWithin(soundThresholdDb, -100...0, "--sound-threshold-db")
    }

    func run() throws {
        try EncodeBench.run(input: input, output: output, bitrate: bitrate, quietBitrate: min(quietBitrate, bitrate),
                            soundThresholdDB: soundThresholdDb, soundMarginDB: soundMarginDb, quietRoom: try parsedQuietRoom(quietRoom))
    }
}

struct JournalCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "journal",
        abstract: "What the audio journal costs and saves: libopusenc's delays, and the stream with the journal at real-time pace.")

    @Option(help: "Seconds of the stream with the journal, at real-time pace.")
    var seconds = 60
    @Option(help: "Seconds of speech encoded with each of libopusenc's delay settings.")
    var encodeSeconds = 300
    @OptionGroup var work: WorkDirectoryOption

    func validate() throws {
        try requirePositive(seconds, "--seconds")
        try requirePositive(encodeSeconds, "--encode-seconds")
    }

    func run() throws { try AudioJournalBench.run(seconds: seconds, encodeSeconds: encodeSeconds, work: work) }
}

struct HealthCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "How fast a health file source ingests, and what an idle one costs (both, without a subcommand).",
        usage: "ariata-bench health [throughput [<lines>] | idle [<seconds>]]",
        subcommands: [Throughput.self, Idle.self])

    func run() throws {
        try HealthBench.throughput(lines: Throughput.defaultLines)
        try HealthBench.idle(seconds: Idle.defaultSeconds)
    }

    struct Throughput: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Lines per second a file source parses, normalises and queues.")
        static let defaultLines = 200_000

        @Argument(help: "JSON Lines to ingest.")
        var lines = Throughput.defaultLines

        func validate() throws { try requirePositive(lines, "lines") }
        func run() throws { try HealthBench.throughput(lines: lines) }
    }

    struct Idle: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Wake-ups and context switches of a file source with nothing to read.")
        static let defaultSeconds = 60.0

        @Argument(help: "Seconds to watch it.")
        var seconds = Idle.defaultSeconds

        func validate() throws {
            guard seconds > 0 else { throw ValidationError("seconds takes a positive number, not \(seconds)") }
        }
        func run() throws { try HealthBench.idle(seconds: seconds) }
    }
}

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Time to export a day of data, each format as `ariata-agent export` writes it.")

    @Option(help: "Location fixes in the day.")
    var fixes = 8_600
    @Option(help: "30 s audio chunks in the day.")
    var chunks = 2_900
    @Option(help: "Bytes of audio per chunk.")
    var chunkBytes = 56_000
    @Option(help: "Health samples in the day.")
    var samples = 1_500

    func validate() throws {
        try requirePositive(fixes, "--fixes")
        try requirePositive(chunks, "--chunks")
        try requirePositive(chunkBytes, "--chunk-bytes")
        try requirePositive(samples, "--samples")
    }

    func run() throws { try ExportBench.run(fixes: fixes, chunks: chunks, chunkBytes: chunkBytes, samples: samples) }
}

struct MetricsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "metrics",
        abstract: "Cost of one [metrics] textfile write, the work the daemon adds to each maintenance round.")

    @Option(help: "Writes to time.")
    var ticks = 200

    func validate() throws { try requirePositive(ticks, "--ticks") }
    func run() throws { try MetricsBench.run(ticks: ticks) }
}

struct PowerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "power",
        abstract: "Cost of the power policy's read, the work [power] adds to each maintenance round.")

    @Option(help: "Reads to time.")
    var reads = 2_000
    @Option(help: ArgumentHelp("A power_supply directory to read (default: a laptop-like fake tree).", valueName: "path"))
    var sysfs: String?

    func validate() throws { try requirePositive(reads, "--reads") }
    func run() throws { try PowerBench.run(reads: reads, sysfs: sysfs) }
}

struct SleepCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sleep",
        abstract: "How soon the daemon releases logind's sleep delay lock: a chunk nearly full, on a slow disk.",
        discussion: """
            Runs `ariata-agent run` with all three streams against the real rigs and python-dbusmock's logind \
            on a private bus, sends PrepareForSleep(true) 2 s before a chunk is full and times the release \
            of the lock, with every fsync held --fsync-ms by strace (0: the disk as it is).
            """)

    @Option(help: "The audio chunk length, in seconds (300: Virtues' length).")
    var chunkSeconds = 300
    @Option(help: "Milliseconds every fsync and fdatasync is held (a slow SD card); 0 for none.")
    var fsyncMs = 500

    func validate() throws {
        try requirePositive(chunkSeconds, "--chunk-seconds")
        if fsyncMs < 0 { throw ValidationError("--fsync-ms must be 0 or more") }
    }
    func run() throws { try SleepBench.run(chunkSeconds: chunkSeconds, fsyncMilliseconds: fsyncMs) }
}

struct FootprintCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "footprint",
        abstract: "The whole daemon's peak RSS, CPU, context switches and writes, all three streams live against the real rigs.",
        usage: """
            ariata-bench footprint [--minutes <minutes>] [--warm-up <warm-up>] [--upload-interval <upload-interval>] [--complexity <complexity>] [--health-every <health-every>] [--sync-seconds <sync-seconds>] [--dir <directory>] [--user <name>] [--shared-libraries] [--tls [--ca-bundle] | --box]
            ariata-bench footprint drain [--records <records>] [--audio-bytes <audio-bytes>] [--batch-max-bytes <batch-max-bytes>] [--shared-libraries]
            """,
        discussion: """
            Runs `ariata-agent run` (beside this program) as a device would and reads /proc/PID from \
            10 s after the start to the end. For the steady state of a new queue: --warm-up 14 --minutes 8. \
            docs/development.md (Benchmarks) explains each figure.
            """,
        subcommands: [Drain.self])

    @Option(help: "Minutes measured.")
    var minutes = 10
    @Option(help: "Minutes run before measuring (a new queue's WAL grows to its size first).")
    var warmUp = 0
    @Option(help: "The daemon's [upload] interval, in seconds.")
    var uploadInterval = 300
    @Option(help: "The Opus encoder's complexity, 0 to 10.")
    var complexity = MicrophoneConfig().complexity
    @Option(help: "Seconds between the health samples the rig appends.")
    var healthEvery = 15
    @Option(help: "The daemon's [microphone] chunk_seconds (30 as on Ariata, 300 as onboarding proposes on Virtues); the overlap stays 2 s.")
    var chunkSeconds = 30
    @Option(help: "The daemon's [storage] sync_seconds.")
    var syncSeconds = StorageConfig().syncSeconds
    @OptionGroup var work: WorkDirectoryOption
    @Flag(help: "Run the rig on the system's libraries, not private copies.")
    var sharedLibraries = false
    @Flag(help: "The receiver serves HTTPS with a self-signed certificate.")
    var tls = false
    @Flag(help: "With --tls: the agent's ca_file is one PEM bundle, not a directory by hash.")
    var caBundle = false
    @Flag(help: "The receiver plays a Virtues box: the daemon pairs with onboard --code and uploads over iroh through ariata-iroh-bridge (beside the agent). Only in a network namespace with loopback alone: sudo unshare --net sh -c 'ip link set lo up && ariata-bench footprint --box'.")
    var box = false
    @Option(help: ArgumentHelp("The user the daemon runs as (default, as root: nobody, a user that may not write the program or its libraries, as the package's own 'ariata'; otherwise this process's user).", valueName: "name"))
    var user: String?

    /// The daemon's user: --user, or `nobody` when this runs as root.
    var serviceUser: String? { user ?? (getuid() == 0 ? "nobody" : nil) }

    func validate() throws {
        try requirePositive(minutes, "--minutes")
        try requireAtLeastZero(warmUp, "--warm-up")
        try requirePositive(uploadInterval, "--upload-interval")
        try requirePositive(healthEvery, "--health-every")
        try requireAtLeastZero(syncSeconds, "--sync-seconds")
        try requireWithin(complexity, 0...10, "--complexity")
        try requireWithin(chunkSeconds, 5...600, "--chunk-seconds")
        if caBundle && !tls { throw ValidationError("--ca-bundle goes with --tls") }
        if box && tls { throw ValidationError("--box and --tls exclude each other: a box is reached over iroh, not TLS") }
    }

    func run() throws { try FootprintBench.run(self) }

    struct Drain: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The peak RSS of `ariata-agent sync` draining a backlog of audio chunks to the reference receiver.")

        @OptionGroup var backlog: BacklogOptions
        @Flag(help: "Run the rig on the system's libraries, not private copies.")
        var sharedLibraries = false

        func run() throws { try FootprintBench.Drain.run(backlog, sharedLibraries: sharedLibraries) }
    }
}
