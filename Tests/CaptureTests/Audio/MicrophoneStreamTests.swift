import AgentCore
import Capture
import Foundation
import Logging
import Platform
import TestRigs
import Synchronization
import XCTest

/// The whole stream: real ALSA capture (file plugin), real Opus encoding, a real SQLite
/// queue in a temporary directory, the opus-tools reference decoder.
final class MicrophoneStreamTests: XCTestCase {
    let rate = 16_000
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let logger = Logger(label: "ariata.microphone.test")

    struct Chunk {
        var start: Date
        var end: Date
        var duration: Double
        var overlap: Double
        var data: Data
        var fields: [String: Any]
    }

    func chunks(in database: AgentDatabase) throws -> [Chunk] {
        try database.recordQueue.records(stream: .microphone).map { record in
            let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: record.payload) as? [String: Any])
            return Chunk(start: try XCTUnwrap(RFC3339.date(from: fields["timestamp_start"] as? String ?? "")),
                         end: try XCTUnwrap(RFC3339.date(from: fields["timestamp_end"] as? String ?? "")),
                         duration: try XCTUnwrap(fields["duration"] as? Double),
                         overlap: try XCTUnwrap(fields["overlap_duration"] as? Double),
                         data: try XCTUnwrap(Data(base64Encoded: fields["audio_data"] as? String ?? "")),
                         fields: fields)
        }
    }

    /// A factory that opens the real ALSA device the first time, scripted, and reports the
    /// device gone afterwards (the input is used up).
    func onceFactory(limitSeconds: Double, afterLimit: ScriptedCapture.AfterLimit, overrunAtSeconds: Double? = nil,
                     progress: ScriptedCapture.Progress, calls: CallCounter) -> AudioCaptureFactory {
        let limit = Int(limitSeconds * Double(rate))
        let overrunAt = overrunAtSeconds.map { Int($0 * Double(rate)) }
        return { device, sampleRate throws(AudioCaptureError) in
            guard calls.next() == 1 else {
                throw AudioCaptureError(kind: .notFound, device: device, detail: "the test input is used up")
            }
            return ScriptedCapture(try ALSACapture(device: device, sampleRate: sampleRate), limit: limit,
                                   afterLimit: afterLimit, overrunAt: overrunAt, progress: progress)
        }
    }

    func makeStream(rig: ALSARig, database: AgentDatabase, clock: any WallClock, factory: @escaping AudioCaptureFactory) -> MicrophoneStream {
        var config = MicrophoneConfig()
        config.device = rig.device
        return MicrophoneStream(config: config, queue: database.recordQueue, clock: clock, logger: logger, captureFactory: factory,
                         tuning: MicrophoneTuning(deviceRetry: Backoff(base: 0.05, cap: 0.2), maxClockSkew: nil))
    }

    func testNinetyFiveSecondsOfSpeechGiveOverlappingChunksThatDecodeToTheirDuration() throws {
        let directory = try TemporaryDirectory()
        let inputPath = try SpeechInput.make(seconds: 110, in: directory.path)
        let input = try SpeechInput.samples(ofRawFile: inputPath)
        let rig = try ALSARig(input: inputPath)
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let progress = ScriptedCapture.Progress()
        let stream = makeStream(rig: rig, database: database, clock: ManualClock(t0),
                                factory: onceFactory(limitSeconds: 95, afterLimit: .end, progress: progress, calls: CallCounter()))
        stream.start()
        try waitUntil("four chunks from 95 s of input", timeout: 120) { stream.stats().chunksWritten >= 4 }
        stream.stop()

        let chunks = try chunks(in: database)
        XCTAssertEqual(chunks.count, 4)
        let first = try XCTUnwrap(chunks.first).start
        XCTAssertLessThanOrEqual(first, t0, "the first sample was captured before the read returned")
        XCTAssertEqual(chunks.map { $0.start.timeIntervalSince(first) }, [0, 28, 56, 84], accuracy: 0.001)
        XCTAssertEqual(chunks.map(\.duration), [30, 30, 30, 11])
        XCTAssertEqual(chunks.map(\.overlap), [0, 2, 2, 2])
        for chunk in chunks {
            XCTAssertEqual(chunk.end.timeIntervalSince(chunk.start), chunk.duration, accuracy: 0.002)
            XCTAssertEqual(chunk.fields["audio_format"] as? String, "ogg")
            XCTAssertEqual(chunk.fields["codec"] as? String, "opus")
            XCTAssertEqual(chunk.fields["sample_rate"] as? Int, 16_000)
            XCTAssertEqual(chunk.fields["channels"] as? Int, 1)
            XCTAssertEqual(chunk.fields["bitrate"] as? Int, 16_000)
            XCTAssertNotNil(UUID(uuidString: chunk.fields["id"] as? String ?? ""))
        }

        let frame = 320 // one 20 ms Opus frame at 16 kHz
        var decoded: [[Int16]] = []
        for (index, chunk) in chunks.enumerated() {
            _ = try OpusTools.info(chunk.data, in: directory)
            let samples = try OpusTools.decode(chunk.data, in: directory)
            XCTAssertEqual(Double(samples.count), chunk.duration * Double(rate), accuracy: Double(frame),
                           "chunk \(index) decodes to its duration within one frame")
            decoded.append(samples)
        }
        for (index, chunk) in chunks.prefix(3).enumerated() {
            XCTAssertEqual(Double(chunk.data.count), 60_000, accuracy: 6_000,
                           "chunk \(index): 30 s at 16 kbit/s is about 60 KB")
        }

        // The audio in each chunk is the input at its place on the timeline.
        for (index, samples) in decoded.enumerated() {
            let offset = index * 28 * rate
            let length = min(samples.count, 10 * rate)
            let c = OpusTools.correlation(samples[rate ..< length], input[offset + rate ..< offset + length])
            print("chunk \(index): \(chunks[index].data.count) bytes, \(samples.count) samples decoded, correlation with the input \(c)")
            XCTAssertGreaterThan(c, 0.7, "chunk \(index) holds the input from \(index * 28) s")
        }
        // The overlap: the first 2 s of chunk N+1 are the last 2 s of chunk N.
        let overlap = 2 * rate
        for index in 0 ..< decoded.count - 1 {
            let end = decoded[index].count
            let head = decoded[index + 1].prefix(overlap)
            let same = OpusTools.correlation(head, decoded[index][end - overlap ..< end])
            let earlier = OpusTools.correlation(head, decoded[index][end - 2 * overlap ..< end - overlap])
            print("overlap \(index)/\(index + 1): correlation \(same), control \(earlier)")
            XCTAssertGreaterThan(same, 0.9, "chunk \(index + 1) begins with the end of chunk \(index)")
            XCTAssertLessThan(earlier, 0.3, "control: a different stretch does not correlate")
        }
    }

    func testStopMidChunkWritesTheChunkInProgress() throws {
        let directory = try TemporaryDirectory()
        let rig = try ALSARig(input: try SpeechInput.make(seconds: 60, in: directory.path))
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let progress = ScriptedCapture.Progress()
        let stream = makeStream(rig: rig, database: database, clock: ManualClock(t0),
                                factory: onceFactory(limitSeconds: 40, afterLimit: .quiet, progress: progress, calls: CallCounter()))
        stream.start()
        try waitUntil("40 s read and the first chunk written", timeout: 60) {
            progress.frames == 40 * rate && stream.stats().chunksWritten == 1
        }
        XCTAssertEqual(try database.recordQueue.count(stream: .microphone, status: .pending), 1)

        stream.stop() // what the daemon does on SIGTERM
        let chunks = try chunks(in: database)
        XCTAssertEqual(chunks.map(\.duration), [30, 12], "stop() returned after writing the 12 s in progress")
        XCTAssertEqual(chunks.map(\.overlap), [0, 2])
        XCTAssertEqual(chunks[1].start.timeIntervalSince(chunks[0].start), 28, accuracy: 0.001)
        XCTAssertTrue(progress.closed, "the device is released")
        _ = try OpusTools.info(chunks[1].data, in: directory)
        XCTAssertEqual(Double(try OpusTools.decode(chunks[1].data, in: directory).count), 12 * Double(rate), accuracy: 320)
    }

    func testMissingDeviceIsUnhealthyAndRecoversWhenItAppears() throws {
        let directory = try TemporaryDirectory()
        let later = directory.file("appears-later.raw")
        let rig = try ALSARig(input: later)
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let progress = ScriptedCapture.Progress()
        let limit = 31 * rate
        let stream = makeStream(rig: rig, database: database, clock: ManualClock(t0)) { device, sampleRate throws(AudioCaptureError) in
            ScriptedCapture(try ALSACapture(device: device, sampleRate: sampleRate), limit: limit, afterLimit: .quiet, progress: progress)
        }
        stream.start()
        defer { stream.stop() }
        try waitUntil("the stream to report the missing device") { stream.liveness().reason?.contains("not found") == true }
        let health = stream.liveness()
        XCTAssertFalse(health.isHealthy)
        let reason = try XCTUnwrap(health.reason)
        XCTAssertTrue(reason.contains("not found") && reason.contains("No such file or directory"), reason)
        XCTAssertTrue(reason.contains(rig.device), reason)
        XCTAssertEqual(stream.stats().deviceOpens, 0)

        _ = try SpeechInput.make(seconds: 40, in: directory.path, name: "appears-later.raw")
        try waitUntil("recovery once the device appears", timeout: 60) {
            stream.liveness().isHealthy && stream.stats().chunksWritten == 1
        }
        XCTAssertEqual(stream.stats().deviceOpens, 1)
        XCTAssertEqual(try chunks(in: database).map(\.duration), [30])
    }

    /// An SBC booted without RTC: audio is captured all the same, its chunk is written held
    /// (never in an upload batch) with its place on the boot clock, and once the clock is
    /// set the correction gives it the time it was really captured.
    func testAnUnsetClockCapturesHeldChunksThatGetTheirTrueTimeOnceItIsSet() throws {
        let directory = try TemporaryDirectory()
        let rig = try ALSARig(input: try SpeechInput.make(seconds: 40, in: directory.path))
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let clock = ManualClock(Date(timeIntervalSince1970: 1_000))
        let progress = ScriptedCapture.Progress()
        let stream = makeStream(rig: rig, database: database, clock: clock,
                                factory: onceFactory(limitSeconds: 31, afterLimit: .quiet, progress: progress, calls: CallCounter()))
        let bootBefore = try XCTUnwrap(BootClock.now())
        stream.start()
        defer { stream.stop() }
        try waitUntil("a chunk captured with the clock in 1970", timeout: 60) { stream.stats().chunksWritten == 1 }
        XCTAssertEqual(stream.stats().deviceOpens, 1, "capture does not wait for the clock")
        let held = try XCTUnwrap(try chunks(in: database).first)
        XCTAssertLessThan(held.start, CaptureTimeRule.earliest, "provisional time from the 1970 clock")
        XCTAssertEqual(try database.recordQueue.pendingBatch(stream: .microphone, maxCount: 10, maxBytes: 10_000_000).count, 0, "held: not for upload")
        XCTAssertEqual(try database.recordQueue.heldCounts(currentBootID: BootClock.bootID).thisBoot, 1)

        clock.set(t0) // NTP answered
        let syncFile = directory.file("clock-sync")
        try "synchronised".write(toFile: syncFile, atomically: true, encoding: .utf8)
        // Evidence of its own: the set clock (t0) is not this machine's true time.
        let outcome = ClockCorrection(database: database, sync: FileClockSync(path: syncFile), clock: clock, evidence: TimeEvidence(),
                                      logger: logger)
            .pass(trustSystemClock: false)
        let bootAfter = try XCTUnwrap(BootClock.now())
        XCTAssertEqual(outcome.corrected, 1)
        let released = try XCTUnwrap(try database.recordQueue.pendingBatch(stream: .microphone, maxCount: 10, maxBytes: 10_000_000).first)
        let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: released.payload) as? [String: Any])
        let start = try XCTUnwrap(RFC3339.date(from: fields["timestamp_start"] as? String ?? ""))
        let end = try XCTUnwrap(RFC3339.date(from: fields["timestamp_end"] as? String ?? ""))
        // Captured between bootBefore and bootAfter on the boot clock, which the set clock
        // reads as t0 at bootAfter; the first sample is dated back by what the device held
        // when it was read (up to the 4 s buffer and a 1 s read).
        XCTAssertLessThanOrEqual(start, t0)
        XCTAssertGreaterThanOrEqual(start, t0.addingTimeInterval(-(bootAfter.seconds - bootBefore.seconds) - 5))
        XCTAssertGreaterThan(start, t0.addingTimeInterval(-60), "the true time, not 1970")
        XCTAssertEqual(end.timeIntervalSince(start), held.end.timeIntervalSince(held.start), accuracy: 0.002, "the length is kept")
        XCTAssertEqual(released.capturedAt.timeIntervalSince1970, start.timeIntervalSince1970, accuracy: 0.001)
    }

    /// A pause is what the daemon's StreamSupervisor does with a stream: stop() it (the
    /// chunk in progress is written, the device released) and, at the resume, start a new
    /// stream on the same queue.
    func testAPauseWritesTheChunkInProgressReleasesTheDeviceAndANewStreamGoesOn() throws {
        let directory = try TemporaryDirectory()
        let rig = try ALSARig(input: try SpeechInput.make(seconds: 50, in: directory.path))
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let firstRun = ScriptedCapture.Progress()
        let secondRun = ScriptedCapture.Progress()
        let calls = CallCounter()
        let factory: AudioCaptureFactory = { device, sampleRate throws(AudioCaptureError) in
            let progress = calls.next() == 1 ? firstRun : secondRun
            return ScriptedCapture(try ALSACapture(device: device, sampleRate: sampleRate), limit: 35 * 16_000,
                                   afterLimit: .quiet, progress: progress)
        }
        let stream = makeStream(rig: rig, database: database, clock: ManualClock(t0), factory: factory)
        stream.start()
        try waitUntil("35 s captured", timeout: 60) { firstRun.frames == 35 * rate && stream.stats().chunksWritten == 1 }

        stream.stop()
        XCTAssertTrue(firstRun.closed, "the device is released")
        XCTAssertEqual(stream.stats().chunksWritten, 2)
        XCTAssertEqual(try chunks(in: database).map(\.duration), [30, 7])

        let resumed = makeStream(rig: rig, database: database, clock: ManualClock(t0), factory: factory)
        resumed.start()
        defer { resumed.stop() }
        try waitUntil("capture after resume", timeout: 60) { secondRun.frames == 35 * rate && resumed.stats().chunksWritten == 1 }
        XCTAssertTrue(resumed.liveness().isHealthy)
        XCTAssertEqual(calls.value, 2)
        XCTAssertEqual(try chunks(in: database).map(\.overlap), [0, 2, 0], "audio after a pause does not overlap audio before it")
    }

    func testAnOverrunEndsTheChunkAndCaptureGoesOn() throws {
        let directory = try TemporaryDirectory()
        let rig = try ALSARig(input: try SpeechInput.make(seconds: 80, in: directory.path))
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let progress = ScriptedCapture.Progress()
        let stream = makeStream(rig: rig, database: database, clock: ManualClock(t0),
                                factory: onceFactory(limitSeconds: 70, afterLimit: .end, overrunAtSeconds: 40,
                                                     progress: progress, calls: CallCounter()))
        stream.start()
        try waitUntil("the input used up", timeout: 60) { progress.closed }
        stream.stop()
        XCTAssertEqual(stream.stats().overruns, 1)
        XCTAssertEqual(stream.stats().deviceOpens, 1, "recovered without reopening the device")
        let chunks = try chunks(in: database)
        XCTAssertEqual(chunks.map(\.duration), [30, 12, 30])
        XCTAssertEqual(chunks.map(\.overlap), [0, 2, 0], "the audio after the gap starts a new run")
    }
}

private func XCTAssertEqual(_ a: [Double], _ b: [Double], accuracy: Double, file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a.count, b.count, "\(a) vs \(b)", file: file, line: line)
    for (x, y) in zip(a, b) { XCTAssertEqual(x, y, accuracy: accuracy, "\(a) vs \(b)", file: file, line: line) }
}

extension MicrophoneStreamTests {
    func testAChunkTheQueueRefusesIsKeptAndWrittenLater() throws {
        let directory = try TemporaryDirectory()
        let rig = try ALSARig(input: try SpeechInput.make(seconds: 40, in: directory.path))
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let sink = RefusingQueue(database)
        let progress = ScriptedCapture.Progress()
        var config = MicrophoneConfig()
        config.device = rig.device
        let stream = MicrophoneStream(config: config, queue: sink, clock: ManualClock(t0), logger: logger,
                                      captureFactory: onceFactory(limitSeconds: 35, afterLimit: .quiet, progress: progress, calls: CallCounter()),
                                      tuning: MicrophoneTuning(deviceRetry: Backoff(base: 0.05, cap: 0.2), maxClockSkew: nil))
        stream.start()
        try waitUntil("35 s read and the first chunk refused", timeout: 60) {
            progress.frames == 35 * rate && stream.liveness().code == .storageFull
        }
        XCTAssertEqual(stream.stats().chunksWaiting, 1)
        XCTAssertEqual(try database.recordQueue.count(stream: .microphone, status: .pending), 0)

        sink.setRefusing(false) // space was freed
        stream.stop()
        XCTAssertEqual(try chunks(in: database).map(\.duration), [30, 7], "the kept chunk, then the one in progress")
        XCTAssertEqual(stream.stats().chunksWaiting, 0)
        XCTAssertTrue(stream.liveness().isHealthy)
    }
}

extension MicrophoneStreamTests {
    /// The input runs faster than real time while the wall clock stands still: the sample
    /// count and the clock part by more than `maxClockSkew`, so later chunks are timed from
    /// the clock again (as after NTP steps the clock) while the chunk in progress keeps its start.
    func testChunksFollowTheWallClockWhenTheSampleCountPartsFromIt() throws {
        let directory = try TemporaryDirectory()
        let rig = try ALSARig(input: try SpeechInput.make(seconds: 40, in: directory.path))
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let progress = ScriptedCapture.Progress()
        var config = MicrophoneConfig()
        config.device = rig.device
        let stream = MicrophoneStream(config: config, queue: database.recordQueue, clock: ManualClock(t0), logger: logger,
                                      captureFactory: onceFactory(limitSeconds: 35, afterLimit: .quiet, progress: progress, calls: CallCounter()),
                                      tuning: MicrophoneTuning(deviceRetry: Backoff(base: 0.05, cap: 0.2), maxClockSkew: 2))
        stream.start()
        try waitUntil("35 s read", timeout: 60) { progress.frames == 35 * rate && stream.stats().chunksWritten == 1 }
        stream.stop()
        let chunks = try chunks(in: database)
        XCTAssertEqual(chunks.map(\.duration), [30, 7], "the audio itself is untouched")
        XCTAssertLessThan(chunks[1].start.timeIntervalSince(chunks[0].start), 5,
                          "the second chunk is timed by the clock (which stood still), not 28 s on by the sample count")
        XCTAssertGreaterThan(chunks[1].start, t0.addingTimeInterval(-10))
        XCTAssertLessThanOrEqual(chunks[1].start, t0)
    }
}
