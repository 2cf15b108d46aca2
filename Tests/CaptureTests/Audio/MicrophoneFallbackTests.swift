import AgentCore
import Capture
import Foundation
import Logging
import Platform
import TestRigs
import XCTest

/// The chosen microphone unplugged and plugged back in, on the ALSA rig: two `file`
/// devices fed different tones (440 Hz on the chosen one, 1 kHz on the fallback), real
/// Opus encoding, a real SQLite queue, each chunk decoded by opus-tools and told apart by
/// its tone. Real time: the capture is paced, so the switch gaps are gaps in wall-clock time.
final class MicrophoneFallbackTests: XCTestCase {
    let rate = 16_000
    let logger = Logger(label: "ariata.microphone.fallback.test")
    let chosen = "ariata_chosen_mic"
    let fallback = "ariata_fallback_mic"

    struct Chunk {
        var start: Date
        var end: Date
        var duration: Double
        var overlap: Double
        var samples: [Int16]
    }

    enum Source: Equatable { case chosen, fallback }

    /// Two devices, each with a minute of its own tone.
    func makeRig(in directory: TemporaryDirectory) throws -> ALSARig {
        let chosenInput = directory.file("chosen.raw"), fallbackInput = directory.file("fallback.raw")
        try TestSignal.write(TestSignal.tone(seconds: 90, dbfs: -20, frequency: 440), to: chosenInput)
        try TestSignal.write(TestSignal.tone(seconds: 90, dbfs: -20, frequency: 1_000), to: fallbackInput)
        return try ALSARig(devices: [(chosen, chosenInput), (fallback, fallbackInput)])
    }

    func makeStream(rig: ALSARig, database: AgentDatabase, fallbackDevice: String) -> MicrophoneStream {
        var config = MicrophoneConfig()
        config.device = chosen
        config.fallbackDevice = fallbackDevice
        config.chunkSeconds = 6
        config.overlapSeconds = 1
        return MicrophoneStream(config: config, queue: database.recordQueue, logger: logger, clockTrust: .live(trustSystemClock: true),
                                captureFactory: { device, sampleRate throws(AudioCaptureError) in
                                    try UnpluggableCapture(rig: rig, device: device, sampleRate: sampleRate)
                                },
                                tuning: MicrophoneTuning(deviceRetry: Backoff(base: 0.2, cap: 1), chosenDeviceRetry: 1))
    }

    func chunks(in database: AgentDatabase, directory: TemporaryDirectory) throws -> [Chunk] {
        try database.recordQueue.records(stream: .microphone).map { record in
            let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: record.payload) as? [String: Any])
            let audio = try XCTUnwrap(Data(base64Encoded: fields["audio_data"] as? String ?? ""))
            return Chunk(start: try XCTUnwrap(RFC3339.date(from: fields["timestamp_start"] as? String ?? "")),
                         end: try XCTUnwrap(RFC3339.date(from: fields["timestamp_end"] as? String ?? "")),
                         duration: try XCTUnwrap(fields["duration"] as? Double),
                         overlap: try XCTUnwrap(fields["overlap_duration"] as? Double),
                         samples: try OpusTools.decode(audio, in: directory))
        }.sorted { $0.start < $1.start }
    }

    /// Which tone each tenth of a second holds, by its zero crossings (440 Hz crosses 88
    /// times in 0.1 s, 1 kHz 200 times); nil for a tenth that is neither (silence, a click).
    func sources(_ samples: [Int16]) -> [Source?] {
        stride(from: 0, to: samples.count - rate / 10 + 1, by: rate / 10).map { start in
            let window = samples[start ..< start + rate / 10]
            let crossings = zip(window, window.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
            switch crossings {
            case 70 ... 110: return .chosen
            case 170 ... 230: return .fallback
            default: return nil
            }
        }
    }

    /// The one source a chunk's audio came from; fails when it holds both, or neither.
    func source(of chunk: Chunk, file: StaticString = #filePath, line: UInt = #line) -> Source? {
        let found = sources(chunk.samples)
        let kinds = Set(found.compactMap { $0 })
        XCTAssertEqual(kinds.count, 1, "a chunk from one device only: \(found)", file: file, line: line)
        // Opus's first and last few milliseconds may blur a window; all others are clean.
        XCTAssertLessThanOrEqual(found.filter { $0 == nil }.count, 2, "tenths that are neither tone: \(found)", file: file, line: line)
        return kinds.first
    }

    func testUnpluggedChosenDeviceFallsBackWithinSecondsAndIsTakenBackWhenItReturns() throws {
        let directory = try TemporaryDirectory()
        let rig = try makeRig(in: directory)
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let stream = makeStream(rig: rig, database: database, fallbackDevice: fallback)
        stream.start()
        defer { stream.stop() }
        try waitUntil("capture on the chosen device") { stream.deviceInUse == chosen }
        try waitUntil("a first chunk from the chosen device") { stream.stats().chunksWritten >= 1 }
        Thread.sleep(forTimeInterval: 2)

        try rig.unplug(chosen)
        let unplugged = ProcessInfo.processInfo.systemUptime
        try waitUntil("capture on the fallback", timeout: 10, interval: 0.01) { stream.deviceInUse == fallback }
        let switchSeconds = ProcessInfo.processInfo.systemUptime - unplugged
        XCTAssertLessThan(switchSeconds, 3, "the fallback takes over within a few seconds")
        XCTAssertTrue(stream.liveness().isHealthy, "capture goes on: \(stream.liveness())")
        let details = stream.details()
        XCTAssertEqual(details[StreamCounter.deviceInUse], fallback)
        let reason = try XCTUnwrap(details[StreamCounter.deviceReason])
        XCTAssertTrue(reason.contains("fallback") && reason.contains(chosen) && reason.contains("missing"), reason)
        Thread.sleep(forTimeInterval: 8)

        try rig.plugIn(chosen)
        let returned = ProcessInfo.processInfo.systemUptime
        try waitUntil("capture on the chosen device again", timeout: 10, interval: 0.01) { stream.deviceInUse == chosen }
        let backSeconds = ProcessInfo.processInfo.systemUptime - returned
        XCTAssertLessThan(backSeconds, 3, "the chosen device is taken back within the retry interval (1 s here) and a read")
        XCTAssertEqual(stream.details()[StreamCounter.deviceReason], "the chosen device ([microphone] device)")
        Thread.sleep(forTimeInterval: 4)
        stream.stop()

        XCTAssertEqual(stream.stats().deviceSwitches, 2, "one switch away and one back")
        let all = try chunks(in: database, directory: directory)
        let order = all.map { source(of: $0) }
        // Runs: chosen chunks, then fallback chunks, then chosen chunks again.
        var runs: [[Chunk]] = []
        var runSources: [Source?] = []
        for (chunk, source) in zip(all, order) {
            if runSources.last == source, !runs.isEmpty { runs[runs.count - 1].append(chunk) } else {
                runs.append([chunk])
                runSources.append(source)
            }
        }
        XCTAssertEqual(runSources, [.chosen, .fallback, .chosen], "chunks by device, in time order")
        guard runs.count == 3 else { return }

        for chunk in all {
            // Each record's duration is its audio's: the chunks cut by a switch are shorter.
            XCTAssertEqual(Double(chunk.samples.count) / Double(rate), chunk.duration, accuracy: 0.05)
            XCTAssertEqual(chunk.end.timeIntervalSince(chunk.start), chunk.duration, accuracy: 0.01)
        }
        XCTAssertLessThan(try XCTUnwrap(runs[0].last).duration, 6, "the chunk in progress at the unplug ends there")
        XCTAssertLessThan(try XCTUnwrap(runs[1].last).duration, 6, "the chunk in progress when the device returns ends there")
        XCTAssertEqual(runs[1].first?.overlap, 0, "a new device starts a new run: nothing repeated from the other one")
        XCTAssertEqual(runs[2].first?.overlap, 0)
        // Within a device's run nothing is lost: each chunk starts where the one before
        // ends, less the overlap.
        for run in runs {
            for (before, after) in zip(run, run.dropFirst()) {
                XCTAssertEqual(after.start.timeIntervalSince(before.end), -after.overlap, accuracy: 0.05)
            }
        }
        let gapAway = try XCTUnwrap(runs[1].first).start.timeIntervalSince(try XCTUnwrap(runs[0].last).end)
        let gapBack = try XCTUnwrap(runs[2].first).start.timeIntervalSince(try XCTUnwrap(runs[1].last).end)
        print("microphone fallback: switch seen \(String(format: "%.2f", switchSeconds)) s after the unplug; "
              + "audio gap at the unplug \(String(format: "%.2f", gapAway)) s, at the return \(String(format: "%.2f", gapBack)) s; "
              + "chosen device taken back \(String(format: "%.2f", backSeconds)) s after it returned")
        XCTAssertGreaterThanOrEqual(gapAway, -0.05, "no audio from both devices at once")
        XCTAssertLessThan(gapAway, 3, "the gap at an unplug is at most a few seconds")
        XCTAssertGreaterThanOrEqual(gapBack, -0.05)
        XCTAssertLessThan(gapBack, 1, "both devices are open at the return: the gap is a read at most")
    }

    func testWithoutAFallbackAMissingChosenDeviceIsUnhealthyAndNothingElseIsCaptured() throws {
        let directory = try TemporaryDirectory()
        let rig = try makeRig(in: directory)
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let stream = makeStream(rig: rig, database: database, fallbackDevice: "none")
        try rig.unplug(chosen)
        stream.start()
        defer { stream.stop() }
        try waitUntil("the stream to report the missing device") { stream.liveness().reason?.contains("not found") == true }
        Thread.sleep(forTimeInterval: 2)
        XCTAssertNil(stream.deviceInUse, "the fallback device is not used")
        XCTAssertEqual(stream.stats().deviceOpens, 0)
        XCTAssertEqual(stream.details()[StreamCounter.deviceInUse], "")

        try rig.plugIn(chosen)
        try waitUntil("capture once the chosen device is there") { stream.deviceInUse == chosen && stream.liveness().isHealthy }
        XCTAssertEqual(stream.stats().deviceSwitches, 0)
    }

    func testAMissingFallbackIsNamedInTheReason() throws {
        let directory = try TemporaryDirectory()
        let rig = try makeRig(in: directory)
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let stream = makeStream(rig: rig, database: database, fallbackDevice: fallback)
        try rig.unplug(chosen)
        try rig.unplug(fallback)
        stream.start()
        defer { stream.stop() }
        try waitUntil("the stream to report both devices") { stream.liveness().reason?.contains("either") == true }
        let reason = try XCTUnwrap(stream.liveness().reason)
        XCTAssertTrue(reason.contains(chosen) && reason.contains("the fallback '\(fallback)' cannot be opened either"), reason)

        try rig.plugIn(fallback)
        try waitUntil("capture on the fallback once it is there") { stream.deviceInUse == fallback && stream.liveness().isHealthy }
    }
}
