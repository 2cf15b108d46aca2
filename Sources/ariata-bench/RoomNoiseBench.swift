import AgentCore
import Capture
import Foundation
import Rigs

/// `ariata-bench silence --noise KINDS [--noise-db L,...] [--quiet-percent P,...]
/// [--speech-db S,...] [--spells N] [--spell-seconds T] [--quiet-room Q] [--hold-frames H]`: what the adaptive bit rate does in
/// the noises rooms make (`RoomNoise`). For each noise, level, quiet share and speech
/// level, a stretch of N spells, each T·P % of the noise alone and then speech
/// (tools/demo/speech.opus at S dBFS) over the same noise, goes through the microphone
/// stream's own chunker and encoder (30 s chunks, 2 s overlap, 2 s blocks as the capture
/// thread reads them, the default settings, after 30 s of the noise alone so that the room is
/// known as a day's stream knows it), without ALSA and the queue, so that each 20 ms
/// frame's rate can be read back from its encoder. Printed per row: Opus and wire bytes a day
/// (the stretch scaled to 24 h; wire as `SilenceBench` counts it), the share of frames at
/// the quiet rate (coded or comfort noise), and the frames of speech among them, which must be 0.
/// docs/streams/microphone.md, "Adaptive bit rate".
enum RoomNoiseBench {
    /// A frame is speech when the speech alone is within this many dB of the speech's own
    /// level: its syllables, not the pauses and breaths between them...
    static let speechFrameWithinDB = 20.0
    /// ...and no more than this many dB under the noise in the same frame: speech further
    /// under the room is masked, for a listener and a recogniser alike.
    static let maskedBelowNoiseDB = 10.0

    struct Row {
        var noise: RoomNoise
        var noiseDB: Double
        var quietPercent: Int
        var speechDB: Double
        var opusBytesPerDay: Double
        var wireBytesPerDay: Double
        /// Of all the frames coded (an overlap's frames once per chunk).
        var quietShare: Double
        var speechFrames: Int
        var speechFramesAtQuietRate: Int
    }

    /// Seconds of the noise alone that go through the encoder before the stretch, uncounted.
    static let warmUpSeconds = 30

    static func run(noises: [RoomNoise], noiseDBs: [Double], quietPercents: [Int], speechDBs: [Double], spells: Int, spellSeconds: Int,
                    holdFrames: Int? = nil,
                    adaptive: SilenceBench.Adaptive, work directory: WorkDirectoryOption) throws {
        let work = try directory.workDirectory("rooms")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let speech = try SilenceBench.decodeSpeech(in: work)
        var config = MicrophoneConfig()
        adaptive.apply(to: &config)
        print("\(spells) spells of \(spellSeconds) s (after \(warmUpSeconds) s of the noise alone, not counted), each the noise alone and then speech (tools/demo/speech.opus) over it; "
              + "hold \(holdFrames ?? BitratePlan.defaultHoldFrames) frames; "
              + "quiet_bitrate \(config.quietBitrate), sound_threshold_db \(config.soundThresholdDB), sound_margin_db \(config.soundMarginDB), "
              + "quiet_room \(config.quietRoom.rawValue); "
              + "a speech frame: the speech alone within \(Int(speechFrameWithinDB)) dB of its level and at most \(Int(maskedBelowNoiseDB)) dB under the noise")
        print("| noise | noise dBFS | quiet % | speech dBFS | Opus MB/day | wire MB/day | at the quiet rate | speech frames at the quiet rate |")
        print("|---|---|---|---|---|---|---|---|")
        for noise in noises {
            for noiseDB in noiseDBs {
                for quietPercent in quietPercents {
                    for speechDB in speechDBs {
                        let row = try measure(noise: noise, noiseDB: noiseDB, quietPercent: quietPercent, speechDB: speechDB,
                                              speech: speech, spells: spells, spellSeconds: spellSeconds, holdFrames: holdFrames,
                                              config: config)
                        print(String(format: "| %@ | %.0f | %d | %.0f | %.1f | %.1f | %.1f %% | %d of %d |",
                                     row.noise.rawValue, row.noiseDB, row.quietPercent, row.speechDB,
                                     row.opusBytesPerDay / 1e6, row.wireBytesPerDay / 1e6, row.quietShare * 100,
                                     row.speechFramesAtQuietRate, row.speechFrames))
                        fflush(nil)
                    }
                }
            }
        }
    }

    static func measure(noise: RoomNoise, noiseDB: Double, quietPercent: Int, speechDB: Double, speech: [Int16],
                        spells: Int, spellSeconds: Int, holdFrames: Int? = nil, config: MicrophoneConfig) throws -> Row {
        let rate = RoomNoise.sampleRate, frame = rate / 50
        let speechGain = pow(10, (speechDB - TestSignal.dbfs(speech[...])) / 20)
        var samples: [Int16] = []
        var isSpeech: [Bool] = []
        for spell in 0 ..< spells {
            let room = noise.samples(seconds: Double(spellSeconds), dbfs: noiseDB, seed: UInt64(spell + 1))
            var mixed = room
            let quietSamples = spellSeconds * quietPercent / 100 * rate
            let talk = SilenceBench.repeated(speech, spellSeconds - quietSamples / rate).map {
                Int16(max(-32_768, min(32_767, (Double($0) * speechGain).rounded())))
            }
            for (i, said) in talk.enumerated() where quietSamples + i < mixed.count {
                mixed[quietSamples + i] = Int16(max(-32_768, min(32_767, Int32(mixed[quietSamples + i]) + Int32(said))))
            }
            for start in stride(from: 0, to: mixed.count, by: frame) {
                guard start >= quietSamples else { isSpeech.append(false); continue }
                var clean = AudioLevel(), under = AudioLevel()
                let from = start - quietSamples
                talk.withUnsafeBufferPointer { clean.add(UnsafeBufferPointer(rebasing: $0[min(from, $0.count) ..< min(from + frame, $0.count)])) }
                room.withUnsafeBufferPointer { under.add(UnsafeBufferPointer(rebasing: $0[start ..< min(start + frame, $0.count)])) }
                isSpeech.append(clean.dbfs >= speechDB - speechFrameWithinDB && clean.dbfs >= under.dbfs - maskedBelowNoiseDB)
            }
            samples += mixed
        }

        // The stream's chunker and encoders, as `ChunkAssembly` builds them.
        var settings = OggOpusChunkEncoder.Settings(microphone: config, sampleRate: rate)
        if let holdFrames { settings.adaptive?.holdFrames = holdFrames }
        let carry = BitratePlanCarry()
        // The room as the stream knows it after its first half minute, not counted: a day
        // starts without a floor once, not once per stretch.
        let warmUp = try OggOpusChunkEncoder(settings, carry: carry)
        let lead = noise.samples(seconds: Double(warmUpSeconds), dbfs: noiseDB, seed: 0)
        try lead.withUnsafeBufferPointer { all in
            for start in stride(from: 0, to: all.count, by: 2 * rate) {
                try warmUp.append(UnsafeBufferPointer(rebasing: all[start ..< min(all.count, start + 2 * rate)]))
            }
        }
        _ = try warmUp.finish()
        var encoders: [OggOpusChunkEncoder] = []
        var chunker = AudioChunker<OggOpusChunkEncoder>(
            sampleRate: rate, chunkFrames: config.chunkSeconds * rate, overlapFrames: config.overlapSeconds * rate,
            makeEncoder: { _ in
                let encoder = try OggOpusChunkEncoder(settings, carry: carry)
                encoders.append(encoder)
                return encoder
            })
        var chunks: [AudioChunk] = []
        chunks += try chunker.begin(at: Date(timeIntervalSince1970: 1_800_000_000))
        let block = 2 * rate
        try samples.withUnsafeBufferPointer { all in
            for start in stride(from: 0, to: all.count, by: block) {
                chunks += try chunker.append(UnsafeBufferPointer(rebasing: all[start ..< min(all.count, start + block)]))
            }
        }
        chunks += try chunker.finish()

        var opusBytes = 0, wireBytes = 0
        for chunk in chunks {
            let record = try MicrophoneRecord.make(chunk, bitrate: config.bitrate,
                                                   adaptive: .init(microphone: config),
                                                   silenceThresholdDB: config.silenceThresholdDB)
            opusBytes += chunk.data.count
            // The payload, `,"audio_data":"…"` with the Ogg as base64, and the comma between records.
            wireBytes += record.payload.count + 16 + (chunk.data.count + 2) / 3 * 4 + 1
        }

        // Each frame's rate from the encoder of each chunk that holds it.
        var codedFrames = 0, quietFrames = 0
        var quietSomewhere = [Bool](repeating: false, count: isSpeech.count)
        var chunkStart = 0
        for (encoder, chunk) in zip(encoders, chunks) {
            let changes = encoder.rateChanges
            for (index, change) in changes.enumerated() {
                let end = index + 1 < changes.count ? changes[index + 1].sample : chunk.frames
                let firstFrame = (chunkStart + change.sample) / frame, lastFrame = (chunkStart + end + frame - 1) / frame
                codedFrames += lastFrame - firstFrame
                guard change.bitrate < config.bitrate else { continue }
                quietFrames += lastFrame - firstFrame
                for f in firstFrame ..< min(lastFrame, quietSomewhere.count) { quietSomewhere[f] = true }
            }
            chunkStart += chunk.frames - config.overlapSeconds * rate
        }
        let seconds = Double(samples.count) / Double(rate)
        let perDay = 86_400 / seconds
        return Row(noise: noise, noiseDB: noiseDB, quietPercent: quietPercent, speechDB: speechDB,
                   opusBytesPerDay: Double(opusBytes) * perDay, wireBytesPerDay: Double(wireBytes) * perDay,
                   quietShare: Double(quietFrames) / Double(max(1, codedFrames)),
                   speechFrames: isSpeech.filter { $0 }.count,
                   speechFramesAtQuietRate: zip(isSpeech, quietSomewhere).filter { $0 && $1 }.count)
    }
}
