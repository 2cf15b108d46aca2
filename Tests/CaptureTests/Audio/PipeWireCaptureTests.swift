import AgentCore
import Capture
import Foundation
import Logging
import Synchronization
import TestRigs
import XCTest

/// The microphone stream on a real desktop sound server (`PipeWireRig`: PipeWire,
/// WirePlumber and pipewire-pulse in the test's own session, a pipe source fed a known
/// tone), capturing through ALSA's `default` as the agent does on a laptop
/// (docs/streams/microphone.md, "Sound servers").
final class PipeWireCaptureTests: XCTestCase {
    let rate = 16_000
    /// One second of a 440 Hz tone at -20 dBFS: a whole number of cycles, so it loops seamlessly.
    lazy var tone = TestSignal.tone(seconds: 1, dbfs: -20, frequency: 440)

    func makeRig() throws -> PipeWireRig {
        do {
            return try PipeWireRig()
        } catch let missing as NotInstalled {
            throw XCTSkip("no PipeWire session can be started here: \(missing)")
        }
    }

    func makeStream(_ sink: CollectingSink, log: RecordingLogHandler.Store) -> MicrophoneStream {
        var config = MicrophoneConfig()
        config.device = "default"
        config.chunkSeconds = 5
        config.overlapSeconds = 1
        let logger = Logger(label: "ariata.microphone.pipewire") { _ in RecordingLogHandler(store: log) }
        return MicrophoneStream(config: config, queue: sink, logger: logger, tuning: MicrophoneTuning(deviceRetry: Backoff(base: 0.5, cap: 1)))
    }

    /// The agent and another recorder (`arecord -D default`) capture the same source at the
    /// same time, and both get the fed tone: its level and its frequency.
    func testTheAgentAndAnotherRecorderShareTheSource() throws {
        let rig = try makeRig()
        print("PipeWire rig up in \(String(format: "%.2f", rig.startUpSeconds)) s")
        rig.enter()
        defer { rig.leave() }
        rig.feed(tone)
        let directory = try TemporaryDirectory()
        let other = directory.file("arecord.raw")
        // Longer than the test: it must still be recording when the agent's chunks are in.
        let recorder = try rig.client("arecord", ["-D", "default", "-f", "S16_LE", "-r", "16000", "-c", "1", "-t", "raw", "-d", "60", other])
        let sink = CollectingSink()
        let log = RecordingLogHandler.Store()
        let stream = makeStream(sink, log: log)
        stream.start()
        defer { stream.stop() }
        try waitUntil("two chunks from the pipe source", timeout: 25) { sink.records().count >= 2 }
        XCTAssertTrue(recorder.isRunning, "arecord stopped while the agent captured: \(recorder.stderr())")
        XCTAssertEqual(log.count(.warning), 0, "the agent complained while sharing the source: \(log.messages(.warning))")
        recorder.signal(SIGINT) // arecord ends a raw recording cleanly on SIGINT
        XCTAssertNotNil(recorder.wait(timeout: 10), "arecord did not stop")
        stream.stop()

        // The other recorder: the tone, at its level, after its first half second.
        let recorded = try SpeechInput.samples(ofRawFile: other)
        XCTAssertGreaterThan(recorded.count, 8 * rate, "arecord recorded \(recorded.count) frames")
        let steady = recorded.dropFirst(rate / 2)
        print("arecord: \(String(format: "%.2f", TestSignal.dbfs(steady))) dBFS, \(String(format: "%.1f", Self.frequency(steady))) Hz")
        XCTAssertEqual(TestSignal.dbfs(steady), -20, accuracy: 0.5)
        XCTAssertEqual(Self.frequency(steady), 440, accuracy: 2)

        // The agent: every chunk's level is the tone's, and a decoded chunk is the tone.
        let records = sink.records()
        for record in records {
            let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: record.payload) as? [String: Any])
            let level = try XCTUnwrap(fields["average_db_level"] as? Double)
            print("agent chunk: \(String(format: "%.2f", level)) dBFS")
            XCTAssertEqual(level, -20, accuracy: 1, "a chunk's level is not the fed tone's")
            XCTAssertEqual(fields["is_silent"] as? Bool, false)
        }
        let decoded = try OpusTools.decode(try XCTUnwrap(records[1].attachment?.data), in: directory)
        XCTAssertEqual(Double(decoded.count), 5 * Double(rate), accuracy: 320)
        let decodedSteady = decoded.dropFirst(rate / 10)
        print("agent chunk 2 decoded: \(String(format: "%.2f", TestSignal.dbfs(decodedSteady))) dBFS, \(String(format: "%.1f", Self.frequency(decodedSteady))) Hz")
        XCTAssertEqual(TestSignal.dbfs(decodedSteady), -20, accuracy: 1)
        XCTAssertEqual(Self.frequency(decodedSteady), 440, accuracy: 2)
        XCTAssertEqual(log.count(.info, containing: "microphone capture started"), 1, "opened once, never lost")
    }

    /// The source going away and coming back is an unplugged microphone: nothing crashes,
    /// and capture of the fed tone resumes by itself.
    func testTheSourceGoingAndComingBackIsLikeAnUnpluggedMicrophone() throws {
        let rig = try makeRig()
        rig.enter()
        defer { rig.leave() }
        rig.feed(tone)
        let sink = CollectingSink()
        let log = RecordingLogHandler.Store()
        let stream = makeStream(sink, log: log)
        stream.start()
        defer { stream.stop() }
        try waitUntil("a chunk before the unplug", timeout: 20) { !sink.records().isEmpty }

        try rig.unloadSource()
        // WirePlumber moves the agent's stream to what is left (here the dummy output's
        // monitor: digital silence) or leaves it waiting; either way a chunk of no tone.
        let unplugged = sink.records().count
        try waitUntil("a chunk of the gap, or the stream unhealthy", timeout: 15) {
            sink.levels().dropFirst(unplugged).contains { $0 < -40 } || !stream.liveness().isHealthy
        }
        try rig.loadSource()
        let returned = sink.records().count
        try waitUntil("a whole chunk of the tone after the source came back", timeout: 20) {
            sink.levels().dropFirst(returned).contains { abs($0 + 20) < 0.5 }
        }
        XCTAssertTrue(stream.liveness().isHealthy, "\(stream.liveness())")
        print("chunk levels across the unplug: \(sink.levels().map { String(format: "%.1f", $0) }) "
              + "(\(log.count(.info, containing: "microphone capture started")) opens, \(log.count(.warning)) warnings)")
    }

    /// A process outside the session (the system service's user, which has none) cannot
    /// reach PipeWire through `default`, and the error names the fix.
    func testOutsideTheSessionTheErrorNamesTheFix() throws {
        let rig = try makeRig()
        _ = rig
        let elsewhere = try TemporaryDirectory("ariata-no-session")
        let saved = ["XDG_RUNTIME_DIR", "PIPEWIRE_RUNTIME_DIR"].map { ($0, ProcessInfo.processInfo.environment[$0]) }
        setenv("XDG_RUNTIME_DIR", elsewhere.path, 1)
        unsetenv("PIPEWIRE_RUNTIME_DIR")
        defer { for (name, value) in saved { if let value { setenv(name, value, 1) } else { unsetenv(name) } } }
        do {
            let capture = try ALSACapture.factory("default", rate)
            capture.close()
            XCTFail("default opened outside the session")
        } catch {
            XCTAssertEqual(error.kind, .soundServerUnreachable, "\(error)")
            XCTAssertTrue(error.description.contains("--user-service"), error.description)
            XCTAssertTrue(error.description.contains("system service"), error.description)
        }
    }

    /// The tone's frequency: the median of half-second windows' rising-zero-crossing
    /// counts. A sound server on a loaded machine may drop a cycle of a client that was
    /// late, without the ALSA client being told, which shortens one window; the median
    /// still reads the tone, while a wrong rate or garbled audio moves every window.
    static func frequency(_ samples: ArraySlice<Int16>) -> Double {
        let window = 8_000
        var estimates: [Double] = []
        var start = samples.startIndex
        while start + window <= samples.endIndex {
            estimates.append(crossingFrequency(samples[start..<(start + window)]))
            start += window
        }
        guard !estimates.isEmpty else { return crossingFrequency(samples) }
        return estimates.sorted()[estimates.count / 2]
    }

    /// Frequency from the rising zero crossings of one stretch.
    static func crossingFrequency(_ samples: ArraySlice<Int16>) -> Double {
        var crossings: [Int] = []
        var previous = samples.first ?? 0
        for (index, sample) in zip(samples.indices, samples) {
            if previous < 0 && sample >= 0 { crossings.append(index) }
            previous = sample
        }
        guard let first = crossings.first, let last = crossings.last, crossings.count > 1 else { return 0 }
        return Double(crossings.count - 1) * 16_000 / Double(last - first)
    }
}

/// The records the stream writes, kept in memory with their audio.
final class CollectingSink: RecordSink, Sendable {
    private let kept = Mutex<[NewRecord]>([])

    func enqueue(_ record: NewRecord) throws { kept.withLock { $0.append(record) } }

    func enqueue(_ records: [NewRecord], anchor: SourceAnchor?) throws { kept.withLock { $0 += records } }

    func records() -> [NewRecord] { kept.withLock { $0 } }

    func levels() -> [Double] {
        records().map { record in
            let fields = (try? JSONSerialization.jsonObject(with: record.payload)) as? [String: Any]
            return fields?["average_db_level"] as? Double ?? .nan
        }
    }
}
