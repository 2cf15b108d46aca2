import AgentCore
@testable import Capture
import Foundation
import Logging
import TestRigs
import XCTest

/// The level-adaptive bit rate (docs/streams/microphone.md, "Adaptive bit rate"): the plan
/// on synthetic level sequences, then the real libopusenc encoder judged by opusdec and by
/// the sizes of the Opus packets it wrote.
final class AdaptiveBitrateTests: XCTestCase {
    let quiet = -60.0, loud = -20.0

    func plan(lookAhead: Int = 3, hold: Int = 5) -> BitratePlan {
        BitratePlan(.init(soundBitrate: 16_000, quietBitrate: 6_000, thresholdDB: -55, lookAheadFrames: lookAhead, holdFrames: hold))
    }

    /// "H" for a frame at the full rate, "q" for the quiet rate.
    func marks(_ rates: [Int]) -> String { String(rates.map { $0 == 16_000 ? "H" : "q" }) }

    /// A short syllable, 60 ms.
    var syllable: [Double] { [loud, loud, loud] }

    func testQuietFramesGetTheQuietRateAndSoundTheFullRate() {
        var plan = plan()
        XCTAssertEqual(marks(plan.rates(forLevels: Array(repeating: quiet, count: 8))), "qqqqqqqq")
        XCTAssertEqual(marks(plan.rates(forLevels: Array(repeating: loud, count: 4))), "HHHH")
    }

    func testTheFullRateStartsLookAheadFramesBeforeTheFirstSoundFrame() {
        var plan = plan(lookAhead: 3)
        let levels = Array(repeating: quiet, count: 10) + syllable + Array(repeating: quiet, count: 10)
        XCTAssertEqual(marks(plan.rates(forLevels: levels)), "qqqqqqqHHHHHHHHHHHqqqqq")
    }

    func testTheFullRateHoldsAfterTheLastSoundFrameAndAcrossBlocks() {
        var plan = plan(lookAhead: 0, hold: 5)
        XCTAssertEqual(marks(plan.rates(forLevels: [quiet] + syllable + [quiet, quiet])), "qHHHHH")
        // The hold began in the block before: 3 more frames at the full rate, then quiet.
        XCTAssertEqual(marks(plan.rates(forLevels: Array(repeating: quiet, count: 6))), "HHHqqq")
    }

    func testPausesShorterThanTheHoldStayAtTheFullRate() {
        var plan = plan(lookAhead: 2, hold: 5)
        let words = syllable + [quiet, quiet, quiet, quiet] + syllable + [quiet, quiet, quiet, quiet, quiet] + syllable
        XCTAssertEqual(marks(plan.rates(forLevels: words)), String(repeating: "H", count: words.count))
    }

    func testTheLookAheadSeesOnlyTheFramesHandedOverTogether() {
        var plan = plan(lookAhead: 3)
        XCTAssertEqual(marks(plan.rates(forLevels: Array(repeating: quiet, count: 5))), "qqqqq",
                       "the next block's sound is not known yet: nothing is held back for it")
        XCTAssertEqual(marks(plan.rates(forLevels: syllable + [quiet])), "HHHH")
    }

    func testTheThresholdItselfIsSoundAndNothingBelowIt() {
        var plan = plan(lookAhead: 0, hold: 0)
        XCTAssertEqual(marks(plan.rates(forLevels: [-55.1, -55, -55, -54.9, AudioLevel.floor])), "qHHHq")
        // A room of digital silence: -70 dBFS is far above its floor, and still not sound.
        var silentRoom = plan
        _ = silentRoom.rates(forLevels: Array(repeating: AudioLevel.floor, count: 200))
        XCTAssertEqual(marks(silentRoom.rates(forLevels: Array(repeating: -70, count: 5))), "qqqqq")
    }

    func testAClickShorterThanASyllableStaysQuiet() {
        var plan = plan(lookAhead: 3, hold: 5)
        let clicks = [quiet, quiet, quiet, quiet, loud, quiet, quiet, quiet, quiet, loud, loud, quiet, quiet, quiet, quiet, quiet]
        XCTAssertEqual(marks(plan.rates(forLevels: clicks)), "qqqqqqqqqqqqqqqq", "1 and 2 frames: a key, a knock")
        // One frame under the level inside a syllable does not cut it into clicks.
        XCTAssertEqual(marks(plan.rates(forLevels: [quiet, quiet, quiet, quiet, loud, quiet, loud, quiet, quiet, quiet, quiet, quiet])),
                       "qHHHHHHHHHHH")
    }

    func testTheLookAheadReachesBackOverAShortRiseJustBeforeASyllable() {
        var plan = plan(lookAhead: 3, hold: 0)
        // The first 20 ms of a soft syllable, a dip, then the syllable: 200 ms before the first rise.
        let onset = [quiet, quiet, quiet, quiet, quiet, quiet, loud, quiet, quiet, quiet] + syllable + [quiet]
        XCTAssertEqual(marks(plan.rates(forLevels: onset)), "qqqHHHHHHHHHHq")
        // The same rise further from the syllable is a click: the look-ahead starts at the syllable.
        var apart = self.plan(lookAhead: 3, hold: 0)
        let click = [quiet, quiet, loud, quiet, quiet, quiet, quiet, quiet, quiet, quiet] + syllable + [quiet]
        XCTAssertEqual(marks(apart.rates(forLevels: click)), "qqqqqqqHHHHHHq")
    }

    func testARunAtTheEndOfTheBlockIsFullRateAndHoldsOnlyOnceItProvesASyllable() {
        var plan = plan(lookAhead: 2, hold: 5)
        // The run may go on in the next block: at the full rate, but no hold yet.
        XCTAssertEqual(marks(plan.rates(forLevels: [quiet, quiet, quiet, quiet, quiet, loud])), "qqqHHH")
        XCTAssertEqual(marks(plan.rates(forLevels: [quiet, quiet, quiet, quiet, quiet, quiet, quiet])), "qqqqqqq",
                       "it ended after one frame: a click, no hold")
        XCTAssertEqual(marks(plan.rates(forLevels: [quiet, quiet, quiet, quiet, quiet, loud])), "qqqHHH")
        XCTAssertEqual(marks(plan.rates(forLevels: [loud, loud, quiet, quiet, quiet, quiet, quiet, quiet, quiet])), "HHHHHHHqq",
                       "three frames across the blocks: a syllable, and the hold follows it")
    }

    /// A room whose level moves by several dB from frame to frame (-58 to -52 dBFS, over
    /// the threshold half the time) is quiet once its floor is learnt; speech over it is sound.
    func testTheRoomsOwnFloorAndSpreadAreQuiet() {
        var plan = plan(lookAhead: 0, hold: 5)
        let pattern: [Double] = [-58, -55, -52, -54, -57, -53]
        let room: [Double] = (0 ..< 300).map { pattern[$0 % pattern.count] }
        XCTAssertNil(plan.room.floor)
        XCTAssertTrue(marks(plan.rates(forLevels: Array(room.prefix(50)))).contains("H"),
                      "before a floor is known, the threshold alone decides (and the room is over it)")
        _ = plan.rates(forLevels: Array(room.dropFirst(50)))
        XCTAssertEqual(marks(plan.rates(forLevels: Array(room.prefix(100)))), String(repeating: "q", count: 100))
        let floor = try? XCTUnwrap(plan.room.floor)
        XCTAssertEqual(floor ?? 0, -58, accuracy: 0.5)
        XCTAssertEqual(marks(plan.rates(forLevels: [-58, -57] + Array(repeating: -40.0, count: 3) + [-58])), "qqHHHH",
                       "faint speech 15 dB over the room is sound")
    }

    /// Speech for longer than the floor's window cannot make itself the floor: it has pauses,
    /// and the spread it adds is capped under its level.
    func testLongSpeechStaysSound() {
        var plan = plan(lookAhead: 0, hold: 5)
        _ = plan.rates(forLevels: Array(repeating: -60, count: 200))
        // 60 s of speech: syllables of -30 to -40 dBFS, a short pause at the room's level every 10 frames.
        let speech: [Double] = (0 ..< 3_000).map { (frame: Int) -> Double in
            frame % 10 == 9 ? -60.0 : -40.0 + Double(frame % 3) * 5.0
        }
        var rates: [Int] = []
        for start in stride(from: 0, to: speech.count, by: 100) { rates += plan.rates(forLevels: Array(speech[start ..< start + 100])) }
        XCTAssertFalse(marks(rates).contains("q"), "speech was coded at the quiet rate")
        XCTAssertLessThan(plan.soundLevel, -40)
    }

    /// Faint speech only a few dB over a room that moves, for longer than the floor's window:
    /// the speech does not widen the room's spread (only frames under the level count), so
    /// the level stays under the speech. Counted over all frames, the median would be the
    /// speech's and twice the spread would lift the level over it.
    func testFaintSpeechLongerThanTheWindowDoesNotWidenTheRoomsSpread() {
        var plan = plan(lookAhead: 0, hold: 5)
        let pattern: [Double] = [-57, -56, -55.5, -56.5, -56, -57.5]
        _ = plan.rates(forLevels: (0 ..< 1_500).map { pattern[$0 % pattern.count] })
        // 40 s of speech 5 dB over the room, a pause at the room's level every 8 frames.
        let speech: [Double] = (0 ..< 2_000).map { $0 % 8 == 7 ? pattern[$0 % pattern.count] : -51.0 }
        var rates: [Int] = []
        for start in stride(from: 0, to: speech.count, by: 100) { rates += plan.rates(forLevels: Array(speech[start ..< start + 100])) }
        XCTAssertFalse(marks(rates).contains("q"), "faint speech was coded at the quiet rate from frame \(marks(rates).firstIndex(of: "q").map { marks(rates).distance(from: marks(rates).startIndex, to: $0) } ?? -1)")
        XCTAssertLessThanOrEqual(plan.soundLevel, -51)
    }

    func testEqualRatesAreNotAdaptive() {
        XCTAssertFalse(BitratePlan.Settings(soundBitrate: 16_000, quietBitrate: 16_000, thresholdDB: -55).isAdaptive)
        XCTAssertTrue(BitratePlan.Settings(soundBitrate: 16_000, quietBitrate: 6_000, thresholdDB: -55).isAdaptive)
    }

    // MARK: Through the real encoder

    let rate = 16_000
    /// The defaults of `[microphone] quiet_bitrate`, `sound_threshold_db` and `quiet_room`
    /// (comfort noise).
    let adaptive = OggOpusChunkEncoder.Settings.Adaptive(quietBitrate: MicrophoneConfig().quietBitrate,
                                                         soundThresholdDB: Double(MicrophoneConfig().soundThresholdDB))
    /// The same with `quiet_room = "coded"`: the quiet frames coded at the quiet rate.
    let coded = OggOpusChunkEncoder.Settings.Adaptive(quietBitrate: MicrophoneConfig().quietBitrate,
                                                      soundThresholdDB: Double(MicrophoneConfig().soundThresholdDB), quietRoom: .coded)

    /// Encodes in 2 s blocks, as the capture thread hands them over.
    func encode(_ samples: [Int16], adaptive: OggOpusChunkEncoder.Settings.Adaptive?, journal: JournalFile? = nil,
                finish: Bool = true) throws -> (data: Data, encoder: OggOpusChunkEncoder) {
        let encoder = try OggOpusChunkEncoder(.init(bitrate: 16_000, adaptive: adaptive), journal: journal)
        for start in stride(from: 0, to: samples.count, by: 2 * rate) {
            try samples[start ..< min(start + 2 * rate, samples.count)].withUnsafeBufferPointer { try encoder.append($0) }
        }
        return (finish ? try encoder.finish() : Data(), encoder)
    }

    /// The next chunk takes up the room its predecessor learnt (`BitratePlanCarry`): in a
    /// room louder than the threshold, it starts at the quiet rate instead of learning the
    /// room again at the full rate; a chunk on its own does learn it again.
    func testTheNextChunkKeepsTheRoomsFloor() throws {
        // White: its speech band is as loud as itself, over the threshold.
        let room = RoomNoise.white.samples(seconds: 10, dbfs: -50, seed: 3)
        let carry = BitratePlanCarry()
        let adaptive = coded
        func chunk(_ carry: BitratePlanCarry?) throws -> OggOpusChunkEncoder {
            let encoder = try OggOpusChunkEncoder(.init(bitrate: 16_000, adaptive: adaptive), carry: carry)
            for start in stride(from: 0, to: room.count, by: 2 * rate) {
                try room[start ..< min(start + 2 * rate, room.count)].withUnsafeBufferPointer { try encoder.append($0) }
            }
            _ = try encoder.finish()
            return encoder
        }
        let first = try chunk(carry)
        XCTAssertEqual(first.rateChanges.first?.bitrate, 16_000, "no floor yet: the room is over the threshold")
        XCTAssertEqual(first.rateChanges.last?.bitrate, adaptive.quietBitrate, "once learnt, the room is quiet")
        let next = try chunk(carry)
        XCTAssertEqual(next.rateChanges.map(\.bitrate), [adaptive.quietBitrate], "the next chunk knows the room from its first frame")
        let alone = try chunk(nil)
        XCTAssertEqual(alone.rateChanges.first?.bitrate, 16_000)
    }

    /// An Opus packet of a chunk: its size, where its audio starts and how long it is (in
    /// 16 kHz samples of the decoded chunk, the pre-skip taken off), and its mode and
    /// bandwidth from the TOC byte (RFC 6716, 3.1).
    struct Packet {
        var bytes: Int
        var start: Int
        var samples: Int
        var mode: String
        var bandwidth: String
    }

    /// The Opus packets of an Ogg file, in order, the two header packets left out (RFC 3533
    /// lacing: a packet ends at the first lacing value under 255).
    func packets(_ data: Data) throws -> [Packet] {
        let bytes = [UInt8](data)
        var contents: [[UInt8]] = []
        var partial: [UInt8] = []
        var offset = 0
        while offset + 27 <= bytes.count {
            guard bytes[offset ..< offset + 4].elementsEqual("OggS".utf8) else { throw XCTSkip("not an Ogg page at \(offset)") }
            let segments = Int(bytes[offset + 26])
            var body = offset + 27 + segments
            for lacing in bytes[offset + 27 ..< offset + 27 + segments] {
                partial += bytes[body ..< body + Int(lacing)]
                body += Int(lacing)
                if lacing < 255 {
                    contents.append(partial)
                    partial = []
                }
            }
            offset = body
        }
        XCTAssertEqual(offset, bytes.count, "the pages fill the file")
        let head = try XCTUnwrap(contents.first)
        let preSkip = (Int(head[10]) | Int(head[11]) << 8) / 3
        var at = -preSkip
        return try contents.dropFirst(2).map { packet in
            let config = Int(try XCTUnwrap(packet.first) >> 3)
            // Frame length in 16 kHz samples (10, 20, 40, 60 ms for SILK; 10, 20 hybrid; 2.5 to 20 CELT).
            let (mode, bandwidth, frame): (String, String, Int) = switch config {
            case 0 ..< 12: ("SILK", ["NB", "MB", "WB"][config / 4], [160, 320, 640, 960][config % 4])
            case 12 ..< 16: ("hybrid", ["SWB", "FB"][(config - 12) / 2], [160, 320][config % 2])
            default: ("CELT", ["NB", "WB", "SWB", "FB"][(config - 16) / 4], [40, 80, 160, 320][config % 4])
            }
            let frames = switch packet[0] & 3 {
            case 0: 1
            case 1, 2: 2
            default: Int(packet[1] & 0x3F)
            }
            defer { at += frames * frame }
            return Packet(bytes: packet.count, start: at, samples: frames * frame, mode: mode, bandwidth: bandwidth)
        }
    }

    /// The granule position of the file's last page: where a decoder ends it, in 48 kHz
    /// samples, the pre-skip included (RFC 7845, 4).
    func lastGranule(_ data: Data) throws -> Int {
        let bytes = [UInt8](data)
        var offset = 0, granule: Int?
        while offset + 27 <= bytes.count, bytes[offset ..< offset + 4].elementsEqual("OggS".utf8) {
            granule = (0 ..< 8).reduce(0) { $0 | Int(bytes[offset + 6 + $1]) << (8 * $1) }
            let segments = Int(bytes[offset + 26])
            offset += 27 + segments + bytes[offset + 27 ..< offset + 27 + segments].reduce(0) { $0 + Int($1) }
        }
        XCTAssertEqual(offset, bytes.count, "the pages fill the file")
        return try XCTUnwrap(granule)
    }

    /// The pre-skip of the OpusHead packet, in 48 kHz samples.
    func preSkip(_ data: Data) -> Int {
        let bytes = [UInt8](data)
        // The first page holds only OpusHead: 27 bytes of header, one lacing value, then
        // "OpusHead", version, channels, and the pre-skip.
        return Int(bytes[28 + 10]) | Int(bytes[28 + 11]) << 8
    }

    /// The bytes of the packets whose audio starts in `range` (16 kHz samples).
    func bytes(_ packets: [Packet], in range: Range<Int>) -> Int {
        packets.filter { range.contains($0.start) }.reduce(0) { $0 + $1.bytes }
    }

    func testAQuietChunkIsAThirdOfTheBytesAndDecodesToItsFullDuration() throws {
        let directory = try TemporaryDirectory()
        let room = TestSignal.noise(seconds: 30, dbfs: -60)
        let flat = try encode(room, adaptive: nil)
        let adaptive = coded
        let planned = try encode(room, adaptive: adaptive)
        let ratio = Double(flat.data.count) / Double(planned.data.count)
        print("measured: 30 s of room noise at -60 dBFS: \(flat.data.count) bytes at 16 kbit/s, \(planned.data.count) adaptive (\(String(format: "%.2f", ratio)) ×)")
        XCTAssertGreaterThanOrEqual(ratio, 2.5, "a quiet chunk costs far less than at the full rate")
        XCTAssertEqual(planned.encoder.meanBitrate, adaptive.quietBitrate)
        XCTAssertEqual(flat.encoder.meanBitrate, 16_000)
        _ = try OpusTools.info(planned.data, in: directory)
        let decoded = try OpusTools.decode(planned.data, in: directory)
        XCTAssertEqual(decoded.count, room.count, "opusdec plays the whole chunk")
        let flatLevel = TestSignal.dbfs(try OpusTools.decode(flat.data, in: directory)[16_000 ..< 464_000])
        let quietLevel = TestSignal.dbfs(decoded[16_000 ..< 464_000])
        print(String(format: "measured: decoded level of the room: %.1f dBFS at 16 kbit/s, %.1f at the quiet rate", flatLevel, quietLevel))
        // Opus does not code white noise at exactly its level at either rate (measured: 3 dB
        // under at 16 kbit/s, 3.4 dB over at 5 kbit/s); the room is still there, not silence.
        XCTAssertEqual(flatLevel, -60, accuracy: 4)
        XCTAssertEqual(quietLevel, -60, accuracy: 4, "the room is still heard near its level")
    }

    /// `seconds` of the rig's speech from its first 20 ms frame at or above the threshold,
    /// as the plan measures it (`SpeechBandMeter`).
    func speechFromItsFirstSound(seconds: Int, in directory: TemporaryDirectory) throws -> [Int16] {
        let speech = try SpeechInput.samples(ofRawFile: try SpeechInput.make(seconds: 8, in: directory.path))
        var meter = SpeechBandMeter(sampleRate: rate)
        let frames = stride(from: 0, to: speech.count - 320, by: 320).map { $0 ..< $0 + 320 }
        let levels = speech.withUnsafeBufferPointer { meter.levels(of: $0, frames: frames) }
        let firstSound = try XCTUnwrap(zip(frames, levels).first { $0.1 >= -55 }?.0.lowerBound,
                                       "the speech has a frame above the threshold")
        return Array(speech[firstSound...].prefix(seconds * rate))
    }

    /// Speech after 3.5 s of room noise (inside the second 2 s block, so the look-ahead sees
    /// it) and after 4 s (the first frame of a block: no look-ahead across blocks).
    func testSpeechOnsetIsCodedAtTheFullRate() throws {
        let directory = try TemporaryDirectory()
        let words = try speechFromItsFirstSound(seconds: 6, in: directory)
        for onsetSeconds in [3.5, 4.0] {
            let onset = Int(onsetSeconds * Double(rate))
            let input = TestSignal.noise(seconds: onsetSeconds, dbfs: -60) + words
            let flat = try encode(input, adaptive: nil)
            let planned = try encode(input, adaptive: adaptive)
            let changes = planned.encoder.rateChanges
            XCTAssertEqual(changes.first?.bitrate, adaptive.quietBitrate, "the chunk begins quiet")
            let up = try XCTUnwrap(changes.first { $0.bitrate == 16_000 }, "the rate goes up for the speech")
            let lookAhead = onsetSeconds == 3.5 ? BitratePlan.defaultLookAheadFrames * 320 : 0
            XCTAssertLessThanOrEqual(up.sample, onset - lookAhead, "full rate from \(lookAhead / 320) frames before the onset at \(onsetSeconds) s")

            // The packets of the first 200 ms of speech are as large as at the full rate
            // throughout, and far larger than the quiet rate's.
            let flatPackets = try packets(flat.data), plannedPackets = try packets(planned.data)
            XCTAssertEqual(plannedPackets.reduce(0) { $0 + $1.samples }, flatPackets.reduce(0) { $0 + $1.samples })
            let onsetFlat = bytes(flatPackets, in: onset ..< onset + 3_200), onsetPlanned = bytes(plannedPackets, in: onset ..< onset + 3_200)
            let quietPlanned = bytes(plannedPackets, in: 6_400 ..< 9_600)
            print("measured: onset at \(onsetSeconds) s: the packets of its first 200 ms \(onsetPlanned) bytes adaptive, \(onsetFlat) at 16 kbit/s throughout; 200 ms quiet \(quietPlanned) bytes")
            XCTAssertGreaterThanOrEqual(Double(onsetPlanned), 0.85 * Double(onsetFlat), "the onset is coded at the full rate")
            XCTAssertGreaterThan(Double(onsetPlanned), 1.8 * Double(quietPlanned))
            let decoded = try OpusTools.decode(planned.data, in: directory)
            XCTAssertEqual(decoded.count, input.count, "opusdec plays the whole chunk")
            XCTAssertGreaterThan(OpusTools.correlation(decoded[onset + 1_600 ..< onset + 48_000], input[onset + 1_600 ..< onset + 48_000]), 0.5,
                                 "the speech is there")
        }
    }

    /// Speech after 6 s of room noise at the start of a chunk (libopus begins it
    /// narrowband, at the quiet rate) and again after a 4 s pause (2 s of it at the quiet
    /// rate, long enough for SILK to begin narrowing): from each rise to the full rate on,
    /// every packet is wideband, and the speech's band above 4.5 kHz decodes as loud as at
    /// 16 kbit/s throughout. Left to libopus, SILK climbed back over seconds (measured: both
    /// times the 3 s of speech all mediumband, the band above 4.5 kHz 20 and 14 dB down in
    /// their first second).
    func testSpeechAfterQuietIsCodedWidebandFromTheRise() throws {
        let directory = try TemporaryDirectory()
        let words = try speechFromItsFirstSound(seconds: 3, in: directory)
        let input = TestSignal.noise(seconds: 6, dbfs: -60) + words + TestSignal.noise(seconds: 4, dbfs: -60, seed: 7) + words
        let flat = try encode(input, adaptive: nil)
        let planned = try encode(input, adaptive: adaptive)
        let rises = planned.encoder.rateChanges.filter { $0.bitrate == 16_000 }
        XCTAssertEqual(rises.count, 2, "\(planned.encoder.rateChanges)")
        let plannedPackets = try packets(planned.data)
        let flatDecoded = try OpusTools.decode(flat.data, in: directory), plannedDecoded = try OpusTools.decode(planned.data, in: directory)
        XCTAssertEqual(plannedDecoded.count, input.count, "opusdec plays the whole chunk")
        for (rise, onset) in zip(rises, [6 * rate, 10 * rate + words.count]) {
            let narrower = plannedPackets.filter { (rise.sample ..< onset + words.count).contains($0.start) && $0.bandwidth != "WB" }
            XCTAssertEqual(narrower.count, 0, "packets narrower than wideband from the rise at sample \(rise.sample): \(narrower.prefix(3))")
            let second = onset ..< onset + rate
            let flatHigh = highBandDB(flatDecoded[second]), plannedHigh = highBandDB(plannedDecoded[second])
            print(String(format: "measured: speech at %.1f s, its first second above 4.5 kHz: %.1f dB adaptive, %.1f at 16 kbit/s throughout",
                         Double(onset) / Double(rate), plannedHigh, flatHigh))
            XCTAssertEqual(plannedHigh, flatHigh, accuracy: 1.5, "the first second of speech keeps its band above 4.5 kHz")
        }
        let restart = plannedPackets.filter { $0.mode == "CELT" }
        XCTAssertFalse(restart.isEmpty, "the restarts' 5 ms frames are CELT")
        XCTAssertTrue(restart.allSatisfy { $0.samples == 80 && $0.bandwidth == "WB" }, "\(restart)")
    }

    /// A quiet room (`quiet_room = "comfort-noise"`): the chunk's first frames coded at the
    /// quiet rate, then nothing but one-byte packets of 60 and 40 ms, which the decoder fills
    /// with comfort noise like the room; the chunk decodes to its full duration, the room
    /// near its level rather than silence, for a small part of the coded room's bytes.
    func testAQuietRoomGoesAsComfortNoiseInLongFramesAndDecodesToItsFullDuration() throws {
        let directory = try TemporaryDirectory()
        for (name, room) in [("white", TestSignal.noise(seconds: 30, dbfs: -60)), ("pink", RoomNoise.pink.samples(seconds: 30, dbfs: -60, seed: 2))] {
            let comfort = try encode(room, adaptive: adaptive)
            let quietRate = try encode(room, adaptive: coded)
            let packets = try packets(comfort.data)
            let head = OggOpusChunkEncoder.roomFrames * 320
            // The packets' starts are offset from the frames by the encoder's look-ahead.
            let first = packets.prefix(OggOpusChunkEncoder.roomFrames - 1)
            XCTAssertTrue(first.allSatisfy { $0.samples == 320 && $0.bytes > 1 }, "\(name): the chunk's first frames are coded: \(first)")
            let rest = packets.filter { $0.start >= head }
            XCTAssertGreaterThan(rest.count, 400, name)
            XCTAssertTrue(rest.allSatisfy { $0.bytes == 1 && [640, 960].contains($0.samples) },
                          "\(name): the rest is one-byte 40 and 60 ms packets: \(rest.filter { $0.bytes != 1 || ![640, 960].contains($0.samples) }.prefix(4))")
            XCTAssertEqual(comfort.encoder.rateChanges.map(\.bitrate), [adaptive.quietBitrate, OggOpusChunkEncoder.comfortNoiseRate])
            XCTAssertEqual(comfort.encoder.meanBitrate, adaptive.quietBitrate * OggOpusChunkEncoder.roomFrames / 1_500)
            print("measured: 30 s of \(name) room: \(comfort.data.count) bytes as comfort noise, \(quietRate.data.count) coded at the quiet rate")
            XCTAssertLessThan(comfort.data.count * 4, quietRate.data.count, "\(name): a small part of the coded room's bytes")

            _ = try OpusTools.info(comfort.data, in: directory)
            XCTAssertEqual(try lastGranule(comfort.data) - preSkip(comfort.data), room.count * 3, "\(name): the granule ends the chunk at its last sample")
            let decoded = try OpusTools.decode(comfort.data, in: directory)
            XCTAssertEqual(decoded.count, room.count, "\(name): opusdec plays the whole chunk")
            let codedLevel = TestSignal.dbfs(try OpusTools.decode(quietRate.data, in: directory)[16_000 ..< 464_000])
            let comfortLevel = TestSignal.dbfs(decoded[16_000 ..< 464_000])
            print(String(format: "measured: decoded level of the %@ room: %.1f dBFS as comfort noise, %.1f coded at the quiet rate", name, comfortLevel, codedLevel))
            XCTAssertGreaterThan(comfortLevel, codedLevel - 15, "\(name): the room is still heard, not silence")
            XCTAssertLessThan(comfortLevel, codedLevel + 6, "\(name): no louder than the room")
        }
    }

    /// Chunks of a stretch with quiet, speech, quiet and speech, through the stream's chunker
    /// (30 s chunks, 2 s overlap): each holds packets of 5, 20, 40 and 60 ms, its granule ends
    /// it at its last sample, it decodes to its full duration, the next starts 2 s before its
    /// end, and every packet from 200 ms before each speech onset to the speech's end is coded.
    /// A loud steady sound (a tone at -20 dBFS) is the room to the sound decision, but
    /// concealment would play it back as fainter noise: louder than the comfort-noise
    /// ceiling, it is coded at the quiet rate and decodes as itself.
    func testALoudSteadyRoomIsCodedNotSentAsComfortNoise() throws {
        let directory = try TemporaryDirectory()
        let tone = TestSignal.tone(seconds: 30, dbfs: -20)
        let chunk = try encode(tone, adaptive: adaptive)
        let head = OggOpusChunkEncoder.roomFrames * 320
        let oneByte = try packets(chunk.data).filter { $0.start >= head && $0.bytes == 1 }
        XCTAssertTrue(oneByte.isEmpty, "no comfort-noise packet in a -20 dBFS room: \(oneByte.prefix(3))")
        let decoded = try OpusTools.decode(chunk.data, in: directory)
        XCTAssertEqual(decoded.count, tone.count)
        XCTAssertEqual(TestSignal.dbfs(decoded[16_000 ..< 464_000]), -20, accuracy: 1.5, "the tone at its own level")
        // Still the quiet rate: the room is quiet to the decision, only not sent as comfort noise.
        let rates = chunk.encoder.rateChanges.map(\.bitrate)
        XCTAssertEqual(rates.last, adaptive.quietBitrate, "\(rates)")
        XCTAssertFalse(rates.contains(OggOpusChunkEncoder.comfortNoiseRate), "\(rates)")
    }

    func testChunksWithMixedFrameSizesDecodeToTheirFullDurationWithTheOverlap() throws {
        let directory = try TemporaryDirectory()
        let words = try speechFromItsFirstSound(seconds: 6, in: directory)
        let room = RoomNoise.brown.samples(seconds: 80, dbfs: -55, seed: 5)
        var input = room
        let onsets = [13 * rate + 5_000, 51 * rate + 3_000]
        for onset in onsets {
            for (i, sample) in words.enumerated() {
                input[onset + i] = Int16(clamping: Int32(input[onset + i]) + Int32(sample))
            }
        }
        let carry = BitratePlanCarry()
        var chunker = AudioChunker<OggOpusChunkEncoder>(
            sampleRate: rate, chunkFrames: 30 * rate, overlapFrames: 2 * rate,
            makeEncoder: { _ in try OggOpusChunkEncoder(.init(bitrate: 16_000, adaptive: self.adaptive), carry: carry) })
        var chunks = try chunker.begin(at: Date(timeIntervalSince1970: 1_800_000_000))
        try input.withUnsafeBufferPointer { all in
            for start in stride(from: 0, to: all.count, by: 2 * rate) {
                chunks += try chunker.append(UnsafeBufferPointer(rebasing: all[start ..< min(all.count, start + 2 * rate)]))
            }
        }
        chunks += try chunker.finish()
        XCTAssertEqual(chunks.count, 3, "chunks at 0, 28 and 56 s")
        var chunkStart = 0
        var sizes = Set<Int>()
        for (index, chunk) in chunks.enumerated() {
            XCTAssertEqual(chunk.overlapFrames, index == 0 ? 0 : 2 * rate)
            XCTAssertEqual(chunk.frames, min(30 * rate, input.count - chunkStart))
            let packets = try packets(chunk.data)
            sizes.formUnion(packets.map(\.samples))
            _ = try OpusTools.info(chunk.data, in: directory)
            XCTAssertEqual(try lastGranule(chunk.data) - preSkip(chunk.data), chunk.frames * 3, "chunk \(index): the granule ends it at its last sample")
            let decoded = try OpusTools.decode(chunk.data, in: directory)
            XCTAssertEqual(decoded.count, chunk.frames, "chunk \(index): opusdec plays the whole chunk")
            for onset in onsets {
                let speech = (onset - chunkStart - BitratePlan.defaultLookAheadFrames * 320) ..< (onset - chunkStart + words.count)
                let notCoded = packets.filter { speech.contains($0.start) && $0.bytes == 1 }
                XCTAssertTrue(notCoded.isEmpty, "chunk \(index): speech at \(onset) sent as comfort noise: \(notCoded.prefix(3))")
            }
            chunkStart += chunk.frames - 2 * rate
        }
        XCTAssertTrue(sizes.isSuperset(of: [80, 320, 640, 960]), "5, 20, 40 and 60 ms packets: \(sizes.sorted())")
    }

    /// The level (dB) of the band above about 4.5 kHz: a 31-tap windowed-sinc high-pass.
    func highBandDB(_ samples: ArraySlice<Int16>) -> Double {
        let taps = 31, middle = 15, cutoff = 4_500.0 / 16_000
        let lowPass = (0 ..< taps).map { n -> Double in
            let k = Double(n - middle)
            let sinc = k == 0 ? 2 * cutoff : sin(2 * .pi * cutoff * k) / (.pi * k)
            return sinc * (0.54 - 0.46 * cos(2 * .pi * Double(n) / Double(taps - 1)))
        }
        let x = samples.map(Double.init)
        var energy = 0.0
        for i in taps ..< x.count {
            var y = x[i - middle]
            for n in 0 ..< taps { y -= lowPass[n] * x[i - n] }
            energy += y * y
        }
        return 10 * log10(energy / Double(max(1, x.count - taps)) + 1e-9)
    }

    func testAKilledChunkWithRateChangesRecoversToItsDuration() throws {
        let work = try TemporaryDirectory()
        let journal = AudioJournal(directory: work.file("journal"), logger: Logger(label: "ariata.adaptive.test"))
        try journal.prepare()
        let beginning = ChunkBeginning(start: Date(timeIntervalSince1970: 1_800_000_000), overlapFrames: 0, sampleRate: rate)
        let speech = try SpeechInput.samples(ofRawFile: try SpeechInput.make(seconds: 4, in: work.path))
        // quiet, speech, quiet, speech: the rate changes four times inside the chunk.
        let input = TestSignal.noise(seconds: 5, dbfs: -60) + speech.prefix(3 * rate) + TestSignal.noise(seconds: 5, dbfs: -60, seed: 7)
            + speech.prefix(3 * rate)
        let killed = try encode(input, adaptive: adaptive, journal: try journal.begin(beginning, bitrate: 16_000), finish: false)
        XCTAssertGreaterThanOrEqual(killed.encoder.rateChanges.count, 4, "\(killed.encoder.rateChanges)")
        journal.durability.waitForSyncs()
        let pages = try Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(journal.oggPath(beginning.id))))
        let repaired = try XCTUnwrap(OggOpusRepair.repair(pages))
        // As without rate changes (AudioJournalTests): all but the audio libopusenc has not
        // yet put in a page, under 0.1 s.
        XCTAssertGreaterThan(repaired.duration, Double(input.count) / Double(rate) - 0.1)
        XCTAssertLessThanOrEqual(repaired.duration, Double(input.count) / Double(rate))
        _ = try OpusTools.info(repaired.data, in: work)
        let decoded = try OpusTools.decode(repaired.data, in: work)
        XCTAssertEqual(Double(decoded.count), Double(repaired.samples48k) / 3, accuracy: 1, "opusdec plays what the record states")
        withExtendedLifetime(killed.encoder) {}
    }
}
