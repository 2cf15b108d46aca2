import AgentCore
import COpus
import Foundation

/// Encodes one chunk into a complete Ogg Opus file (RFC 7845) in memory.
///
/// The container is libopusenc's, not hand-written Ogg code: it writes the OpusHead page
/// (with the encoder's pre-skip), the OpusTags page, audio pages with granule positions
/// that make a decoder trim the pre-skip and the padding of the last frame, and the
/// end-of-stream flag on the last page, so the file decodes to exactly the samples given.
/// Pages are taken from libopusenc's pull API (`ope_encoder_create_pull`) and appended to a
/// `Data` and, when the chunk has one, to its journal file, with the page ended after every
/// block handed over, so a crash loses only the audio not yet in a page (the frame not yet
/// complete, under 20 ms). The finished chunk is the in-memory copy: reading the journal
/// back would cost a read per chunk and fail exactly when the journal could not be written
/// (a full disk), when the chunk is most at risk.
///
/// Opus settings: application VOIP and signal voice (speech is what we keep), 20 ms
/// frames, VBR at the configured bit rate; with `adaptive`, the rate follows the speech
/// band's level of each 20 ms frame (`SpeechBandMeter`, `BitratePlan`), set between two frames with `OPUS_SET_BITRATE`,
/// and each rise to the full rate starts SILK again at wideband (`writeRun`)
/// (docs/streams/microphone.md, "Adaptive bit rate").
public final class OggOpusChunkEncoder: ChunkEncoder {
    public struct Settings: Sendable, Equatable {
        public var sampleRate: Int
        public var bitrate: Int
        /// libopus complexity 0...10; 10 is the libopus and opusenc default.
        public var complexity: Int
        /// Audio libopusenc holds before encoding it, in 48 kHz samples (its default is
        /// 96,000 = 2 s, room to decide where to chain streams, which chunks never do):
        /// 0 encodes each 20 ms frame as soon as it is complete, at no cost in size
        /// (measured: `ariata-bench journal`).
        public var decisionDelay: Int
        /// The longest a page may hold before libopusenc ends it, in 48 kHz samples (its
        /// default is 48,000 = 1 s). Each page costs a 27-byte header.
        public var muxingDelay: Int
        /// With a journal: end the page after every block of samples handed over (about
        /// every 2 s, what one capture wake brings), so what was encoded is in the journal at once.
        public var pageEveryBlock: Bool
        /// The quiet rate and what is sound; nil (or a quiet rate equal to `bitrate`)
        /// encodes everything at `bitrate`.
        public var adaptive: Adaptive?

        public struct Adaptive: Sendable, Equatable {
            public var quietBitrate: Int
            /// Below it nothing is sound (`sound_threshold_db`).
            public var soundThresholdDB: Double
            /// How far above the room's floor sound must be (`sound_margin_db`).
            public var soundMarginDB: Double
            public var lookAheadFrames: Int
            public var holdFrames: Int
            /// What the quiet frames are sent as (`quiet_room`).
            public var quietRoom: QuietRoom

            public init(quietBitrate: Int, soundThresholdDB: Double, soundMarginDB: Double = BitratePlan.defaultMarginDB,
                        lookAheadFrames: Int = BitratePlan.defaultLookAheadFrames,
                        holdFrames: Int = BitratePlan.defaultHoldFrames, quietRoom: QuietRoom = MicrophoneConfig().quietRoom) {
                self.quietBitrate = quietBitrate
                self.quietRoom = quietRoom
                self.soundThresholdDB = soundThresholdDB
                self.soundMarginDB = soundMarginDB
                self.lookAheadFrames = lookAheadFrames
                self.holdFrames = holdFrames
            }
        }

        public init(sampleRate: Int = 16_000, bitrate: Int = 16_000, complexity: Int = 10,
                    decisionDelay: Int = 0, muxingDelay: Int = 48_000, pageEveryBlock: Bool = true, adaptive: Adaptive? = nil) {
            self.adaptive = adaptive
            self.sampleRate = sampleRate
            self.bitrate = bitrate
            self.complexity = complexity
            self.decisionDelay = decisionDelay
            self.muxingDelay = muxingDelay
            self.pageEveryBlock = pageEveryBlock
        }

        /// The settings the microphone stream encodes with, from `[microphone]`.
        public init(microphone config: MicrophoneConfig, sampleRate: Int) {
            self.init(sampleRate: sampleRate, bitrate: config.bitrate, complexity: config.complexity,
                      adaptive: .init(quietBitrate: config.quietBitrate, soundThresholdDB: Double(config.soundThresholdDB),
                                      soundMarginDB: Double(config.soundMarginDB), quietRoom: config.quietRoom))
        }
    }

    private var data = Data()
    private let journal: JournalFile?
    private let pageEveryBlock: Bool
    private var encoder: OpaquePointer?
    private var samplesWritten = 0
    /// Set only when the quiet rate is below the sound rate.
    private var plan: BitratePlan?
    /// Where the plan comes from and goes back to after each block, for the next chunk.
    private let carry: BitratePlanCarry?
    /// What the plan judges sound by (set with `plan`).
    private var meter: SpeechBandMeter?
    /// Whether the full rate is pinned to wideband, with SILK restarted at each rise to it.
    private let widebandRestart: Bool
    /// Samples still to be written in 5 ms frames since the last rise to the full rate.
    private var restartSamplesLeft = 0
    /// Samples per 20 ms frame at the input rate: where the plan's frames begin.
    private let frameSamples: Int
    /// The plan's rate of the frames last written (the quiet rate for comfort noise too).
    private var currentBitrate: Int
    /// What the encoder was last told: its target rate and frame duration.
    private var opusBitrate: Int
    private var opusFrameDuration = OPUS_FRAMESIZE_20_MS
    /// Whether the quiet frames go as comfort noise (`QuietRoom.comfortNoise`).
    private let comfortNoise: Bool
    /// Sum over the samples written of the rate each was encoded at: the chunk's mean rate.
    private var bitrateSampleSum = 0
    /// Where the rate changed: the sample (counted from the chunk's first) from which on
    /// it applies, and the rate. The first entry is the rate the chunk began at.
    public private(set) var rateChanges: [(sample: Int, bitrate: Int)] = []

    /// - Parameter journal: where the chunk's pages also go as they are produced; nil for
    ///   none. The encoder closes it when the chunk is finished and removes it when the
    ///   chunk is dropped unfinished.
    /// - Parameter carry: shared by the chunks of one stream: the plan (the room's floor,
    ///   the hold) the previous chunk left, taken up by this one. nil: a plan of its own.
    public init(_ settings: Settings, journal: JournalFile? = nil, carry: BitratePlanCarry? = nil) throws {
        self.journal = journal
        self.carry = carry
        pageEveryBlock = journal != nil && settings.pageEveryBlock
        frameSamples = max(1, settings.sampleRate / 50)
        currentBitrate = settings.bitrate
        opusBitrate = settings.bitrate
        comfortNoise = settings.adaptive?.quietRoom == .comfortNoise
        if let adaptive = settings.adaptive {
            let planSettings = BitratePlan.Settings(soundBitrate: settings.bitrate, quietBitrate: adaptive.quietBitrate,
                                                    thresholdDB: adaptive.soundThresholdDB, marginDB: adaptive.soundMarginDB,
                                                    lookAheadFrames: adaptive.lookAheadFrames, holdFrames: adaptive.holdFrames)
            if planSettings.isAdaptive {
                if let carried = carry?.plan, carried.settings == planSettings {
                    plan = carried
                } else {
                    plan = BitratePlan(planSettings)
                }
                if let carried = carry?.meter, carried.sampleRate == settings.sampleRate {
                    meter = carried
                } else {
                    meter = SpeechBandMeter(sampleRate: settings.sampleRate)
                }
            }
        }
        widebandRestart = plan != nil && settings.sampleRate == 16_000 && settings.bitrate >= Self.widebandRestartMinimumBitrate
        guard let comments = ope_comments_create() else { throw OpusEncodingError(call: "ope_comments_create", code: OPE_ALLOC_FAIL) }
        defer { ope_comments_destroy(comments) }
        var error: Int32 = 0
        // The pull API, not callbacks: only it lets the encoder end a page on demand
        // (`ope_encoder_get_page` with flush), which is how every block of samples handed
        // over reaches the journal at once instead of waiting for the page to fill.
        let created = ope_encoder_create_pull(comments, opus_int32(settings.sampleRate), 1, 0, &error)
        guard let created, error == OPE_OK else {
            if let created { ope_encoder_destroy(created) }
            throw OpusEncodingError(call: "ope_encoder_create_pull", code: error)
        }
        encoder = created
        try check(ariata_ope_set_application(created, OPUS_APPLICATION_VOIP), "OPUS_SET_APPLICATION")
        try check(ariata_ope_set_signal_voice(created), "OPUS_SET_SIGNAL")
        try check(ariata_ope_set_bitrate(created, opus_int32(settings.bitrate)), "OPUS_SET_BITRATE")
        try check(ariata_ope_set_complexity(created, opus_int32(settings.complexity)), "OPUS_SET_COMPLEXITY")
        try check(ariata_ope_set_frame_duration(created, OPUS_FRAMESIZE_20_MS), "OPUS_SET_EXPERT_FRAME_DURATION")
        // The input is 16-bit: telling the encoder so keeps it from spending bits on the
        // quantisation noise of quiet stretches (opusenc does the same for 16-bit input).
        try check(ariata_ope_set_lsb_depth(created, 16), "OPUS_SET_LSB_DEPTH")
        // The 512 bytes libopusenc reserves in OpusTags are for tag editors; a chunk is never edited.
        try check(ariata_ope_set_comment_padding(created, 0), "OPE_SET_COMMENT_PADDING")
        try check(ariata_ope_set_decision_delay(created, opus_int32(settings.decisionDelay)), "OPE_SET_DECISION_DELAY")
        try check(ariata_ope_set_muxing_delay(created, opus_int32(settings.muxingDelay)), "OPE_SET_MUXING_DELAY")
        if widebandRestart { try check(ariata_ope_set_bandwidth(created, OPUS_BANDWIDTH_WIDEBAND), "OPUS_SET_BANDWIDTH") }
    }

    /// The lowest full rate that is pinned to wideband with a restart at each rise. From
    /// about 9 kbit/s libopus codes voice wideband by itself; below, both rates are
    /// narrowband and no bandwidth changes.
    public static let widebandRestartMinimumBitrate = 10_000

    public func append(_ samples: UnsafeBufferPointer<Int16>) throws {
        guard let encoder else { throw OpusEncodingError(call: "ope_encoder_write after finish", code: OPE_TOO_LATE) }
        guard let base = samples.baseAddress, !samples.isEmpty else { return }
        if plan != nil {
            try appendPlanned(samples, to: encoder)
        } else {
            try check(ope_encoder_write(encoder, base, Int32(samples.count)), "ope_encoder_write")
            noteRate(currentBitrate, samples: samples.count)
        }
        // With a journal, the frames just encoded end their page now: a kill then loses
        // only the samples of the frame not yet complete. Without one, pages fill as usual.
        collectPages(encoder, flush: pageEveryBlock)
    }

    /// The mean of the rates the chunk's samples were encoded at (what its record's
    /// `bitrate` says); the configured rate before any sample.
    public var meanBitrate: Int? {
        guard samplesWritten > 0 else { return currentBitrate }
        return Int((Double(bitrateSampleSum) / Double(samplesWritten)).rounded())
    }

    /// The samples cut into the encoder's 20 ms frames (counted from the chunk's first
    /// sample, so a block that ends inside a frame continues it in the next), each frame's
    /// level taken (whole, for comfort noise's ceiling; in the speech band, for the plan), the plan's rate set before the frames it is for are encoded, and the
    /// frames of one rate written together (one `ope_encoder_write` per run, not per frame).
    private func appendPlanned(_ samples: UnsafeBufferPointer<Int16>, to encoder: OpaquePointer) throws {
        var bounds: [Range<Int>] = []
        var levels: [Double] = []
        var start = 0
        while start < samples.count {
            let intoFrame = (samplesWritten + start) % frameSamples
            let end = min(samples.count, start + frameSamples - intoFrame)
            var level = AudioLevel()
            level.add(UnsafeBufferPointer(rebasing: samples[start ..< end]))
            bounds.append(start ..< end)
            levels.append(level.dbfs)
            start = end
        }
        guard let soundLevels = meter?.levels(of: samples, frames: bounds),
              let rates = plan?.rates(forLevels: soundLevels) else { return }
        carry?.plan = plan
        carry?.meter = meter
        let blockStart = samplesWritten
        var runStart = 0
        while runStart < bounds.count {
            var runEnd = runStart + 1
            while runEnd < bounds.count, rates[runEnd] == rates[runStart] { runEnd += 1 }
            let range = bounds[runStart].lowerBound ..< bounds[runEnd - 1].upperBound
            if rates[runStart] != currentBitrate {
                let rising = rates[runStart] > currentBitrate
                if widebandRestart {
                    // The quiet rate is left to libopus's own choice (narrowband at 5 kbit/s).
                    try check(ariata_ope_set_bandwidth(encoder, rising ? OPUS_BANDWIDTH_WIDEBAND : OPUS_AUTO), "OPUS_SET_BANDWIDTH")
                    restartSamplesLeft = rising ? frameSamples / 4 : 0
                }
                currentBitrate = rates[runStart]
            }
            if comfortNoise, currentBitrate == plan?.settings.quietBitrate {
                try writeQuiet(bounds[runStart ..< runEnd], levels: levels, of: samples, blockStart: blockStart, to: encoder)
            } else {
                let run = UnsafeBufferPointer(rebasing: samples[range])
                try writeRun(run, to: encoder)
                noteRate(currentBitrate, samples: run.count)
            }
            runStart = runEnd
        }
    }

    /// Writes a run of frames; after a rise, its first 5 ms in 5 ms frames. SILK has no
    /// 5 ms frames, so libopus codes them (and what it holds from before) with CELT, and
    /// after a CELT frame it starts SILK afresh at the bandwidth set: wideband at once.
    /// Left to itself, SILK climbs from narrowband a step at a time behind a low-pass
    /// filter that opens over about 5 s, and codes the first seconds of speech narrower
    /// (docs/streams/microphone.md, "Adaptive bit rate").
    private func writeRun(_ run: UnsafeBufferPointer<Int16>, to encoder: OpaquePointer) throws {
        var rest = run
        if restartSamplesLeft > 0 {
            let head = UnsafeBufferPointer(rebasing: run.prefix(restartSamplesLeft))
            try setTarget(currentBitrate, frame: OPUS_FRAMESIZE_5_MS, on: encoder)
            try write(head, to: encoder)
            restartSamplesLeft -= head.count
            rest = UnsafeBufferPointer(rebasing: run[head.count...])
        }
        try setTarget(currentBitrate, frame: OPUS_FRAMESIZE_20_MS, on: encoder)
        try write(rest, to: encoder)
    }

    /// The frames of a quiet run sent as comfort noise (`QuietRoom.comfortNoise`): whole
    /// frames past the chunk's first `roomFrames` go in 60 and 40 ms frames at a target under
    /// what libopus codes such frames at, so each is a one-byte packet that the decoder
    /// conceals with comfort noise shaped like the room it last decoded. The chunk's first
    /// frames are coded (at the quiet rate), so that a chunk decoded on its own knows its
    /// room; so are a lone frame, one cut by the block's end, and a frame louder than
    /// `comfortNoiseCeilingDB` (a loud room, a tone, music: concealment would play it back
    /// as fainter noise of another colour, so it is coded at the quiet rate). A stretch of n whole frames
    /// goes as 60 ms frames and up to two 40 ms ones (n = 3a + 2b), so each setting gets a
    /// whole number of its frames and libopusenc holds back no more than at 20 ms: a kill
    /// loses no more, and no quiet frame waits to be coded under the next run's settings
    /// (docs/decisions/0018-a-quiet-room-sent-as-comfort-noise.md).
    private func writeQuiet(_ frames: ArraySlice<Range<Int>>, levels: [Double], of samples: UnsafeBufferPointer<Int16>,
                            blockStart: Int, to encoder: OpaquePointer) throws {
        var index = frames.startIndex
        while index < frames.endIndex {
            var end = index
            while end < frames.endIndex, frames[end].count == frameSamples, levels[end] <= Self.comfortNoiseCeilingDB,
                  (blockStart + frames[end].lowerBound) / frameSamples >= Self.roomFrames { end += 1 }
            let whole = end - index
            guard whole >= 2 else {
                try setTarget(currentBitrate, frame: OPUS_FRAMESIZE_20_MS, on: encoder)
                let frame = UnsafeBufferPointer(rebasing: samples[frames[index]])
                try write(frame, to: encoder)
                noteRate(currentBitrate, samples: frame.count)
                index += 1
                continue
            }
            let pairs = [0, 2, 1][whole % 3]
            let triples = (whole - 2 * pairs) / 3
            for (count, duration) in [(3 * triples, OPUS_FRAMESIZE_60_MS), (2 * pairs, OPUS_FRAMESIZE_40_MS)] where count > 0 {
                try setTarget(Self.comfortNoiseTarget, frame: duration, on: encoder)
                let stretch = UnsafeBufferPointer(rebasing: samples[frames[index].lowerBound ..< frames[index + count - 1].upperBound])
                try write(stretch, to: encoder)
                noteRate(Self.comfortNoiseRate, samples: stretch.count)
                index += count
            }
        }
    }

    /// Frames a chunk codes before its quiet frames may go as comfort noise: enough for the
    /// decoder to learn the room's level and colour.
    public static let roomFrames = 10
    /// The loudest frame sent as comfort noise: quiet rooms (the benchmark's noises up to
    /// -50 dBFS, whose frames swell a few dB) are under it; a louder steady sound is coded.
    public static let comfortNoiseCeilingDB = -40.0
    /// Under libopus's lowest target for coding a frame longer than 20 ms (2.4 kbit/s): such
    /// a frame becomes a one-byte packet.
    static let comfortNoiseTarget = 1_000
    /// The rate `rateChanges` and `meanBitrate` count comfort-noise frames at: nothing is coded.
    public static let comfortNoiseRate = 0

    /// Tells the encoder a target rate and frame duration, when they are not already its own.
    private func setTarget(_ bitrate: Int, frame duration: Int32, on encoder: OpaquePointer) throws {
        if bitrate != opusBitrate {
            try check(ariata_ope_set_bitrate(encoder, opus_int32(bitrate)), "OPUS_SET_BITRATE")
            opusBitrate = bitrate
        }
        if duration != opusFrameDuration {
            try check(ariata_ope_set_frame_duration(encoder, duration), "OPUS_SET_EXPERT_FRAME_DURATION")
            opusFrameDuration = duration
        }
    }

    private func write(_ samples: UnsafeBufferPointer<Int16>, to encoder: OpaquePointer) throws {
        guard let base = samples.baseAddress, !samples.isEmpty else { return }
        try check(ope_encoder_write(encoder, base, Int32(samples.count)), "ope_encoder_write")
    }

    private func noteRate(_ bitrate: Int, samples count: Int) {
        if rateChanges.last?.bitrate != bitrate { rateChanges.append((samplesWritten, bitrate)) }
        bitrateSampleSum += bitrate * count
        samplesWritten += count
    }

    public func finish() throws -> Data {
        guard let encoder else { throw OpusEncodingError(call: "ope_encoder_drain after finish", code: OPE_TOO_LATE) }
        // libopusenc asserts (aborts the process) when draining an encoder that never got a sample.
        guard samplesWritten > 0 else { throw OpusEncodingError(call: "ope_encoder_drain of an empty chunk", code: OPE_BAD_ARG) }
        defer {
            ope_encoder_destroy(encoder)
            self.encoder = nil
        }
        try check(ope_encoder_drain(encoder), "ope_encoder_drain")
        collectPages(encoder, flush: true)
        journal?.pagesComplete()
        return data
    }

    /// Frees the encoder of a chunk dropped unfinished (a stop inside an overlap); its
    /// journal goes with it, since the chunk's audio is in the previous chunk.
    deinit {
        if let encoder {
            ope_encoder_destroy(encoder)
            journal?.discard()
        }
    }

    /// Takes the pages libopusenc has ready: into the chunk's bytes and its journal.
    private func collectPages(_ encoder: OpaquePointer, flush: Bool) {
        var page: UnsafeMutablePointer<UInt8>?
        var length: opus_int32 = 0
        var flushNow: Int32 = flush ? 1 : 0
        while ope_encoder_get_page(encoder, &page, &length, flushNow) == 1, let page {
            let bytes = UnsafeRawBufferPointer(start: page, count: Int(length))
            data.append(contentsOf: bytes)
            journal?.append(bytes)
            flushNow = 0
        }
    }

    private func check(_ result: Int32, _ call: String) throws {
        guard result == OPE_OK else { throw OpusEncodingError(call: call, code: result) }
    }
}

public struct OpusEncodingError: Error, CustomStringConvertible, Equatable {
    public let call: String
    public let code: Int32

    public var description: String {
        let message = ope_strerror(code).map { String(cString: $0) } ?? "error \(code)"
        return "Opus encoding failed in \(call): \(message)"
    }
}
