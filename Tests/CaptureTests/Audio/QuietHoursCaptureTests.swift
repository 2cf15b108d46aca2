import AgentCore
import Capture
import Foundation
import Logging
import Platform
import TestRigs
import XCTest

/// The microphone stream with its gate: real ALSA capture (file plugin), real Opus, the
/// real audio journal and queue. The quiet hours close the gate at a boundary on the
/// capture timeline; the chunk in progress ends there and no audio of the quiet span
/// reaches an encoder, the journal or the queue.
final class QuietHoursCaptureTests: XCTestCase {
    let rate = 16_000
    /// 2027-01-15 08:00:20 UTC: quiet hours from 08:01 to 08:02 (UTC) begin 40 s into the
    /// input and end 100 s into it.
    let t0 = Date(timeIntervalSince1970: 1_800_000_020)
    let logger = Logger(label: "ariata.microphone.test")

    /// The wall clock as the samples read so far tell it: the file plugin reads faster than
    /// real time, and the gate's boundaries must fall where the audio is.
    struct SampleClock: WallClock {
        let start: Date
        let progress: ScriptedCapture.Progress
        let rate: Int
        func now() -> Date { start.addingTimeInterval(Double(progress.frames) / Double(rate)) }
    }

    struct Chunk {
        var start: Date
        var end: Date
        var overlap: Double
    }

    func chunks(in database: AgentDatabase) throws -> [Chunk] {
        try database.recordQueue.records(stream: .microphone).map { record in
            let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: record.payload) as? [String: Any])
            return Chunk(start: try XCTUnwrap(RFC3339.date(from: fields["timestamp_start"] as? String ?? "")),
                         end: try XCTUnwrap(RFC3339.date(from: fields["timestamp_end"] as? String ?? "")),
                         overlap: try XCTUnwrap(fields["overlap_duration"] as? Double))
        }.sorted { $0.start < $1.start }
    }

    func stream(seconds: Double, in directory: TemporaryDirectory, database: AgentDatabase,
                progress: ScriptedCapture.Progress) throws -> (MicrophoneStream, journal: String, rig: ALSARig) {
        let input = try SpeechInput.make(seconds: seconds + 5, in: directory.path)
        let rig = try ALSARig(input: input)
        var config = MicrophoneConfig()
        config.device = rig.device
        config.fallbackDevice = "none"
        config.quiet = [QuietHours(from: try XCTUnwrap(TimeOfDay("08:01")), to: try XCTUnwrap(TimeOfDay("08:02")))]
        let clock = SampleClock(start: t0, progress: progress, rate: rate)
        let gate = MicrophoneGate(microphone: config, zones: [], timeZone: try XCTUnwrap(TimeZone(identifier: "UTC")), clock: clock)
        let limit = Int(seconds * Double(rate))
        let calls = CallCounter()
        let factory: AudioCaptureFactory = { device, sampleRate throws(AudioCaptureError) in
            guard calls.next() == 1 else {
                throw AudioCaptureError(kind: .notFound, device: device, detail: "the test input is used up")
            }
            return ScriptedCapture(try ALSACapture(device: device, sampleRate: sampleRate), limit: limit,
                                   afterLimit: .quiet, progress: progress)
        }
        let journal = directory.file("journal")
        let stream = MicrophoneStream(config: config, queue: database.recordQueue, clock: clock, logger: logger,
                                      captureFactory: factory,
                                      tuning: MicrophoneTuning(deviceRetry: Backoff(base: 0.05, cap: 0.2), maxClockSkew: nil),
                                      journal: .init(directory: journal, queue: database.recordQueue), gate: gate)
        return (stream, journal, rig)
    }

    func journalFiles(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { !$0.hasPrefix(".") }
    }

    /// 90 s read, the last 50 s of them in quiet hours: the chunk in progress at 08:01 ends
    /// there, and while the quiet audio is read nothing of it is in the journal or the queue.
    func testTheChunkInProgressEndsAtTheBoundaryAndNoQuietAudioIsWritten() throws {
        let directory = try TemporaryDirectory()
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let progress = ScriptedCapture.Progress()
        let (stream, journal, rig) = try stream(seconds: 90, in: directory, database: database, progress: progress)
        defer { withExtendedLifetime(rig) {} }
        stream.start()
        try waitUntil("90 s read and two chunks written", timeout: 60) {
            progress.frames == 90 * rate && stream.stats().chunksWritten == 2
        }
        // Inside the quiet span, the capture thread reading on: no journal of a chunk in
        // progress, and the queue holds the chunks before 08:01 only.
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(journalFiles(journal), [], "no audio of the quiet hours in the journal")
        let boundary = t0.addingTimeInterval(40)
        var written = try chunks(in: database)
        XCTAssertEqual(written.count, 2)
        let first = try XCTUnwrap(written.first).start
        XCTAssertEqual(try XCTUnwrap(written.last).start.timeIntervalSince(first), 28, accuracy: 0.001)
        XCTAssertEqual(try XCTUnwrap(written.last).end.timeIntervalSince(boundary), 0, accuracy: 0.001,
                       "the chunk in progress ends at 08:01 itself")
        stream.stop()
        written = try chunks(in: database)
        XCTAssertEqual(written.count, 2, "stopping in quiet hours writes nothing more")
        XCTAssertTrue(written.allSatisfy { $0.end <= boundary.addingTimeInterval(0.001) }, "\(written.map(\.end))")
        XCTAssertEqual(journalFiles(journal), [])
    }

    /// 130 s read: quiet from 40 s to 100 s. Capture starts again with a new chunk at 08:02
    /// (no overlap with anything before); no chunk holds a moment of the quiet span.
    func testCaptureStartsAgainWithANewChunkWhenTheQuietHoursEnd() throws {
        let directory = try TemporaryDirectory()
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let progress = ScriptedCapture.Progress()
        let (stream, journal, rig) = try stream(seconds: 130, in: directory, database: database, progress: progress)
        defer { withExtendedLifetime(rig) {} }
        stream.start()
        try waitUntil("130 s read and three chunks written", timeout: 60) {
            progress.frames == 130 * rate && stream.stats().chunksWritten >= 3
        }
        stream.stop()
        let written = try chunks(in: database)
        let quietStart = t0.addingTimeInterval(40), quietEnd = t0.addingTimeInterval(100)
        for chunk in written {
            XCTAssertTrue(chunk.end <= quietStart.addingTimeInterval(0.001) || chunk.start >= quietEnd,
                          "a chunk from \(chunk.start) to \(chunk.end) holds quiet audio")
        }
        let after = written.filter { $0.start >= quietEnd }
        let first = try XCTUnwrap(after.first, "capture started again")
        XCTAssertEqual(first.start.timeIntervalSince(quietEnd), 0, accuracy: 0.2, "the new chunk begins at 08:02")
        XCTAssertEqual(first.overlap, 0, "it repeats nothing: the chunk before ended at 08:01")
        let captured = written.reduce(0) { $0 + $1.end.timeIntervalSince($1.start) - $1.overlap }
        XCTAssertEqual(captured, 40 + 30, accuracy: 0.3, "everything outside the quiet hours, nothing inside")
        XCTAssertEqual(journalFiles(journal), [])
    }
}
