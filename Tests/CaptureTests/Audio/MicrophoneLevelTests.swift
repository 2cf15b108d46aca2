import AgentCore
import Capture
import Foundation
import Logging
import Platform
import TestRigs
import XCTest

/// Each chunk's `average_db_level` and `is_silent`, and `upload_silent = false`, through
/// real ALSA capture (the file plugin rig) fed signals of known level, real Opus encoding,
/// a real SQLite queue and the audio journal.
final class MicrophoneLevelTests: XCTestCase {
    let rate = 16_000
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    struct Run {
        var records: [[String: Any]]
        var stats: MicrophoneStream.Stats
        var counters: [String: Int]
        var log: RecordingLogHandler.Store
        var journalLeft: [String]
    }

    /// Captures all of `samples` in 10 s chunks overlapping by 2 s (chunks start every 8 s).
    func capture(_ samples: [Int16], thresholdDB: Int = -50, uploadSilent: Bool = true) throws -> Run {
        let directory = try TemporaryDirectory()
        let input = directory.file("input.raw")
        try TestSignal.write(samples + TestSignal.silence(seconds: 5), to: input) // the plugin must not run dry first
        let rig = try ALSARig(input: input)
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        var config = MicrophoneConfig()
        config.device = rig.device
        config.chunkSeconds = 10
        config.overlapSeconds = 2
        config.silenceThresholdDB = thresholdDB
        config.uploadSilent = uploadSilent
        let log = RecordingLogHandler.Store()
        let logger = Logger(label: "ariata.microphone.test") { _ in RecordingLogHandler(store: log) }
        let progress = ScriptedCapture.Progress()
        let calls = CallCounter()
        let journal = directory.file("journal")
        let stream = MicrophoneStream(config: config, queue: database.recordQueue, clock: ManualClock(t0), logger: logger,
                                      captureFactory: { device, sampleRate throws(AudioCaptureError) in
                                          guard calls.next() == 1 else {
                                              throw AudioCaptureError(kind: .notFound, device: device, detail: "the test input is used up")
                                          }
                                          return ScriptedCapture(try ALSACapture(device: device, sampleRate: sampleRate),
                                                                 limit: samples.count, afterLimit: .end, progress: progress)
                                      },
                                      tuning: MicrophoneTuning(deviceRetry: Backoff(base: 5, cap: 5), maxClockSkew: nil),
                                      journal: .init(directory: journal, queue: database.recordQueue))
        stream.start()
        try waitUntil("the input captured to its end", timeout: 120) { progress.closed }
        stream.stop()
        _ = rig
        let records = try database.recordQueue.records(stream: .microphone).map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: $0.payload) as? [String: Any])
        }
        return Run(records: records, stats: stream.stats(), counters: stream.counters(), log: log,
                   journalLeft: (try? FileManager.default.contentsOfDirectory(atPath: journal)) ?? [])
    }

    func levels(_ run: Run) -> [Double] { run.records.map { $0["average_db_level"] as? Double ?? .nan } }
    func silent(_ run: Run) -> [Bool?] { run.records.map { $0["is_silent"] as? Bool } }

    func testDigitalSilenceReadsAsTheFloorAndIsSilent() throws {
        let run = try capture(TestSignal.silence(seconds: 22))
        XCTAssertEqual(run.records.count, 3, "chunks at 0, 8 and 16 s")
        XCTAssertEqual(levels(run), [-100, -100, -100])
        XCTAssertEqual(silent(run), [true, true, true])
        XCTAssertEqual(run.stats.silentChunksDropped, 0, "upload_silent = true keeps everything")
    }

    func testAToneReadsAtTheLevelItWasFedAt() throws {
        let samples = TestSignal.tone(seconds: 22, dbfs: -20)
        let run = try capture(samples)
        XCTAssertEqual(run.records.count, 3)
        let starts = [0, 8 * rate, 16 * rate]
        for (record, start) in zip(run.records, starts) {
            let level = try XCTUnwrap(record["average_db_level"] as? Double)
            let end = min(samples.count, start + 10 * rate)
            XCTAssertEqual(level, TestSignal.dbfs(samples[start ..< end]), accuracy: 0.05, "the chunk's own samples, overlap included")
            XCTAssertEqual(level, -20, accuracy: 0.1, "the level fed")
            XCTAssertEqual(record["is_silent"] as? Bool, false)
        }
    }

    func testRoomNoiseEitherSideOfTheDefaultThreshold() throws {
        let quiet = try capture(TestSignal.noise(seconds: 12, dbfs: -60))
        XCTAssertEqual(levels(quiet).count, 2)
        for level in levels(quiet) { XCTAssertEqual(level, -60, accuracy: 0.3) }
        XCTAssertEqual(silent(quiet), [true, true], "-60 dBFS is below -50")

        let room = try capture(TestSignal.noise(seconds: 12, dbfs: -45))
        for level in levels(room) { XCTAssertEqual(level, -45, accuracy: 0.3) }
        XCTAssertEqual(silent(room), [false, false], "-45 dBFS is above -50")

        let stricter = try capture(TestSignal.noise(seconds: 12, dbfs: -45), thresholdDB: -40)
        XCTAssertEqual(silent(stricter), [true, true], "the threshold decides: -45 is below -40")
    }

    /// The adaptive bit rate through the stream (docs/streams/microphone.md, "Adaptive bit
    /// rate"): a quiet room, a tone, then the room again, in 10 s chunks; each record says its
    /// mean rate, the settings are in its metadata, and every chunk plays to its duration.
    func testEachRecordSaysItsMeanBitRateAndTheSettings() throws {
        let samples = TestSignal.noise(seconds: 12, dbfs: -60) + TestSignal.tone(seconds: 6, dbfs: -20)
            + TestSignal.noise(seconds: 14, dbfs: -60, seed: 3)
        let run = try capture(samples)
        XCTAssertEqual(run.records.count, 4, "chunks at 0, 8, 16 and 24 s")
        let rates = run.records.map { $0["bitrate"] as? Int ?? 0 }
        print("measured: records' bitrate \(rates)")
        let quiet = 5_000.0 // the default quiet_bitrate
        // With the default quiet_room ("comfort-noise"), a chunk codes its first 200 ms of
        // room at the quiet rate and sends the rest of the room as comfort noise, counted at 0.
        let head = Double(OggOpusChunkEncoder.roomFrames) / 50
        XCTAssertEqual(Double(rates[0]), head * quiet / 10, accuracy: 1, "0–10 s: the room only")
        // 8–18 s: 3.8 s of room (4 s before the tone less the 200 ms look-ahead, when the
        // tone starts mid-block), its first 200 ms coded; 6.2 s at the full rate.
        XCTAssertEqual(Double(rates[1]), (head * quiet + 6.2 * 16_000) / 10, accuracy: 410, "a 2 s block boundary moves the look-ahead")
        // 16–26 s: the tone to 18 s, held to 20 s, then the room as comfort noise (the
        // chunk's first frames were the tone's).
        XCTAssertEqual(Double(rates[2]), 4 * 16_000 / 10, accuracy: 50)
        XCTAssertEqual(Double(rates[3]), head * quiet / 8, accuracy: 1, "24–32 s: the room only")
        for record in run.records {
            let metadata = try XCTUnwrap(record["metadata"] as? [String: Any])
            XCTAssertEqual(metadata["bitrate"] as? Int, 16_000)
            XCTAssertEqual(metadata["quiet_bitrate"] as? Int, 5_000)
            XCTAssertEqual(metadata["sound_threshold_db"] as? Int, -55)
            XCTAssertEqual(metadata["sound_margin_db"] as? Int, 3)
            XCTAssertEqual(metadata["quiet_room"] as? String, "comfort-noise")
        }
        let directory = try TemporaryDirectory()
        for record in run.records {
            let data = try XCTUnwrap(Data(base64Encoded: record["audio_data"] as? String ?? ""))
            let decoded = try OpusTools.decode(data, in: directory)
            XCTAssertEqual(Double(decoded.count), try XCTUnwrap(record["duration_seconds"] as? Double) * Double(rate), accuracy: 1)
        }
    }

    /// Tone, 32 s of silence, tone, 32 s of silence, tone: chunks at 0, 8, …, 80 s; those at
    /// 16, 24, 56 and 64 s hold nothing but silence.
    var twoQuietSpells: [Int16] {
        TestSignal.tone(seconds: 9, dbfs: -20) + TestSignal.silence(seconds: 32) + TestSignal.tone(seconds: 8, dbfs: -20)
            + TestSignal.silence(seconds: 32) + TestSignal.tone(seconds: 9, dbfs: -20)
    }

    func testUploadSilentKeepsEveryChunkAndMarksTheSilentOnes() throws {
        let run = try capture(twoQuietSpells)
        XCTAssertEqual(run.records.count, 11)
        XCTAssertEqual(silent(run), [false, false, true, true, false, false, false, true, true, false, false])
        XCTAssertEqual(run.stats.silentChunksDropped, 0)
        XCTAssertEqual(run.counters[StreamCounter.silentChunksDropped], 0)
        XCTAssertEqual(run.log.count(.notice, containing: "silent chunks are dropped"), 0)
        XCTAssertEqual(run.records.map { $0["overlap_duration"] as? Double }, [0] + Array(repeating: 2, count: 10))
    }

    func testUploadSilentFalseDropsSilentChunksCountsThemAndSaysSoOncePerSpell() throws {
        let run = try capture(twoQuietSpells, uploadSilent: false)
        let starts = try run.records.map { try XCTUnwrap(RFC3339.date(from: $0["timestamp_start"] as? String ?? "")) }
        let first = try XCTUnwrap(starts.first)
        XCTAssertEqual(starts.map { ($0.timeIntervalSince(first) * 1000).rounded() / 1000 }, [0, 8, 32, 40, 48, 72, 80],
                       "the chunks at 16, 24, 56 and 64 s were dropped")
        XCTAssertEqual(silent(run), Array(repeating: false, count: 7))
        XCTAssertEqual(run.stats.silentChunksDropped, 4)
        XCTAssertEqual(run.counters[StreamCounter.silentChunksDropped], 4, "what status and the metrics show")
        XCTAssertEqual(run.stats.chunksWritten, 7)
        XCTAssertEqual(run.log.count(.notice, containing: "silent chunks are dropped until sound returns"), 2, "once per quiet spell")
        // The first chunk after a dropped one overlaps nothing that was kept.
        XCTAssertEqual(run.records.map { $0["overlap_duration"] as? Double }, [0, 2, 0, 2, 2, 0, 2])
        XCTAssertEqual(run.journalLeft, [], "a dropped chunk leaves nothing in the audio journal")
    }
}
