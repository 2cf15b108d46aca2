import AgentCore
@testable import Capture
import Foundation
import Logging
import Platform
import TestRigs
import XCTest

/// The audio journal with real parts: libopusenc writing pages into it, libogg closing a
/// cut-off journal, opus-tools judging the result, a real SQLite queue.
final class AudioJournalTests: XCTestCase {
    let rate = 16_000
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let logger = Logger(label: "ariata.journal.test")

    /// Encodes `seconds` of speech into a journal without finishing the chunk (what a kill
    /// leaves) and returns a copy of the journal's files taken at that moment.
    func killedJournal(seconds: Double, overlapFrames: Int = 0, id: UUID = UUID(), provisional: ProvisionalTime? = nil,
                       into snapshot: String, work: TemporaryDirectory) throws -> (pages: Data, header: JournalHeader) {
        let samples = try SpeechInput.samples(ofRawFile: try SpeechInput.make(seconds: seconds + 1, in: work.path))
        let journal = AudioJournal(directory: work.file("journal-\(id.uuidString.prefix(8))"), logger: logger)
        try journal.prepare()
        let beginning = ChunkBeginning(id: id, start: t0, overlapFrames: overlapFrames, sampleRate: rate)
        let encoder = try OggOpusChunkEncoder(.init(), journal: try journal.begin(beginning, bitrate: 16_000, provisional: provisional))
        // In 0.5 s blocks (the capture thread hands over 2 s; smaller blocks give more
        // pages to cut between).
        let fed = Array(samples.prefix(Int(seconds * Double(rate))))
        for start in stride(from: 0, to: fed.count, by: rate / 2) {
            try fed[start ..< min(start + rate / 2, fed.count)].withUnsafeBufferPointer { try encoder.append($0) }
        }
        journal.durability.waitForSyncs()
        try FileManager.default.createDirectory(atPath: snapshot, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: journal.directory) {
            try FileManager.default.copyItem(atPath: "\(journal.directory)/\(name)", toPath: "\(snapshot)/\(name)")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: journal.directory).count, 1, "a chunk's journal is one file")
        let path = try XCTUnwrap(journal.oggPath(id))
        let pages = try Data(contentsOf: URL(fileURLWithPath: path))
        guard case .journal(let header) = JournalHeader.parse(fileName: URL(fileURLWithPath: path).lastPathComponent) else {
            throw XCTSkip("unreachable: the journal's name \(path) holds no header")
        }
        withExtendedLifetime(encoder) {}
        return (pages, header)
    }

    func pageOffsets(_ data: Data) -> [Int] {
        var offsets: [Int] = []
        var from = data.startIndex
        while let found = data.range(of: Data("OggS".utf8), in: from ..< data.endIndex) {
            offsets.append(found.lowerBound - data.startIndex)
            from = found.upperBound
        }
        return offsets
    }

    func testAJournalCutAnywhereRecoversToAPlayableFileOfItsStatedDuration() throws {
        let work = try TemporaryDirectory()
        let (pages, header) = try killedJournal(seconds: 6.3, into: work.file("snapshot"), work: work)
        XCTAssertEqual(header.sampleRate, rate)
        let offsets = pageOffsets(pages)
        XCTAssertGreaterThanOrEqual(offsets.count, 2 + 13, "a page per 0.5 s block: \(offsets.count) pages for 6.3 s")

        // Pages reach the journal at once: what a kill leaves covers all but the frame not
        // yet complete (decision delay 0, the page ended after every block).
        let whole = try XCTUnwrap(OggOpusRepair.repair(pages))
        XCTAssertTrue(whole.wasCut)
        XCTAssertGreaterThan(whole.duration, 6.3 - 0.1, "audio given to the encoder but not yet in a page")

        var cuts = [pages.count]
        for index in [2, 3, offsets.count / 2, offsets.count - 1] {
            let page = offsets[index]
            cuts += [page, page + 1, page + 13, page + 27, page + 40]
        }
        var generator = SystemRandomNumberGenerator()
        cuts += (0 ..< 5).map { _ in Int.random(in: offsets[2] ..< pages.count, using: &generator) }
        for cut in cuts {
            let truncated = pages.prefix(cut)
            guard let repaired = OggOpusRepair.repair(truncated) else {
                XCTAssertLessThanOrEqual(cut, offsets[3], "only a cut inside the first audio page leaves no audio (cut at \(cut))")
                continue
            }
            let lastPage = try XCTUnwrap(repaired.data.range(of: Data("OggS".utf8), options: .backwards)).lowerBound
            XCTAssertTrue(pages.starts(with: repaired.data.prefix(upTo: lastPage)), "complete pages are kept as they were")
            XCTAssertEqual(repaired.data[lastPage + 5] & 0x04, 0x04, "the last page ends the stream")
            let info = try OpusTools.info(repaired.data, in: work)
            XCTAssertTrue(info.contains("Original sample rate: 16000 Hz"), info)
            let decoded = try OpusTools.decode(repaired.data, in: work)
            let stated = Double(repaired.samples48k) / 3
            XCTAssertEqual(Double(decoded.count), stated, accuracy: 1,
                           "cut at \(cut) of \(pages.count): opusdec plays what the record states")
        }
        XCTAssertNil(OggOpusRepair.repair(pages.prefix(offsets[2])), "headers only: no audio")
        XCTAssertNil(OggOpusRepair.repair(Data()))
        XCTAssertNil(OggOpusRepair.repair(Data(repeating: 0, count: 4_096)), "zeros (a power cut's unwritten blocks)")
        // A power cut can leave zeros where the last blocks were: the pages before them stand.
        let zeroTail = try XCTUnwrap(OggOpusRepair.repair(pages.prefix(offsets[8] + 10) + Data(repeating: 0, count: 4_096)))
        XCTAssertEqual(zeroTail.data, try XCTUnwrap(OggOpusRepair.repair(pages.prefix(offsets[8]))).data)
    }

    func testAFinishedChunkIsUnchangedByRepair() throws {
        let work = try TemporaryDirectory()
        let samples = try SpeechInput.samples(ofRawFile: try SpeechInput.make(seconds: 4, in: work.path))
        let encoder = try OggOpusChunkEncoder(.init())
        try samples.prefix(3 * rate + 77).withUnsafeBufferPointer { try encoder.append($0) }
        let data = try encoder.finish()
        let repaired = try XCTUnwrap(OggOpusRepair.repair(data))
        XCTAssertFalse(repaired.wasCut)
        XCTAssertEqual(repaired.data, data)
        XCTAssertEqual(repaired.samples48k, Int64(3 * rate + 77) * 3, "granule minus pre-skip is the chunk's length")
    }

    /// What a start finds in the journal: a chunk cut off after its overlap (recovered), one
    /// killed inside its overlap (dropped: its audio is in the previous chunk), one whose
    /// record is already queued (killed between enqueue and unlink: not written twice), a
    /// version 1 journal left by 0.1.x (`<id>.json` beside `<id>.ogg`: recovered), a version
    /// 1 header without pages and a page file without a header (removed), and the journal
    /// of a newer version (left alone).
    func testRecoveryAtStartWritesOnlyWhatIsNotQueuedAndBeyondItsOverlap() throws {
        let work = try TemporaryDirectory()
        let database = try AgentDatabase(path: work.file("queue.sqlite"))
        let directory = AudioJournal.directory(forDatabase: database.path)
        let cut = UUID(), overlapOnly = UUID(), queued = UUID()
        let (cutPages, _) = try killedJournal(seconds: 5, overlapFrames: 2 * rate, id: cut, into: directory, work: work)
        _ = try killedJournal(seconds: 1.5, overlapFrames: 2 * rate, id: overlapOnly, into: directory, work: work)
        _ = try killedJournal(seconds: 4, id: queued, into: directory, work: work)
        let alreadyThere = AudioChunk(id: queued, start: t0, frames: 4 * rate, overlapFrames: 0, sampleRate: rate, data: Data([1]))
        try database.recordQueue.enqueue(try MicrophoneRecord.make(alreadyThere, bitrate: 16_000))
        // Version 1, as 0.1.x wrote it: the header in a JSON file of its own.
        func writeVersion1Header(_ id: UUID, start: Date) throws {
            var header = JournalHeader(beginning: ChunkBeginning(id: id, start: start, overlapFrames: 0, sampleRate: rate), bitrate: 16_000)
            header.version = 1
            try JSONEncoder().encode(header).write(to: URL(fileURLWithPath: "\(directory)/\(id.uuidString.lowercased()).json"))
        }
        let version1 = UUID()
        let version1Pages = try killedJournal(seconds: 3, id: version1, into: work.file("version1"), work: work).pages
        try version1Pages.write(to: URL(fileURLWithPath: "\(directory)/\(version1.uuidString.lowercased()).ogg"))
        try writeVersion1Header(version1, start: t0.addingTimeInterval(-60))
        try writeVersion1Header(UUID(), start: t0)
        try Data("OggS".utf8).write(to: URL(fileURLWithPath: "\(directory)/\(UUID().uuidString.lowercased()).ogg"))
        let newer = "\(UUID().uuidString.lowercased())_3_z1.ogg"
        try Data("OggS".utf8).write(to: URL(fileURLWithPath: "\(directory)/\(newer)"))

        let stream = MicrophoneStream(config: MicrophoneConfig(), queue: database.recordQueue, clock: ManualClock(t0), logger: logger,
                                      captureFactory: { device, _ throws(AudioCaptureError) in
                                          throw AudioCaptureError(kind: .notFound, device: device, detail: "no device in this test")
                                      },
                                      tuning: MicrophoneTuning(deviceRetry: Backoff(base: 0.05, cap: 0.2), maxClockSkew: nil),
                                      journal: .init(directory: directory, queue: database.recordQueue))
        stream.start()
        try waitUntil("the recovered chunks written", timeout: 30) { stream.stats().chunksWritten == 2 }
        stream.stop()

        let records = try database.recordQueue.records(stream: .microphone)
        XCTAssertEqual(Set(records.map(\.id)), [cut, queued, version1], "the queued chunk once, the overlap-only chunk not at all")
        XCTAssertEqual(records.map(\.id).filter { $0 != queued }, [version1, cut], "oldest first")
        let version1Fields = try XCTUnwrap(JSONSerialization.jsonObject(with: try XCTUnwrap(records.first { $0.id == version1 }).payload) as? [String: Any])
        XCTAssertEqual(version1Fields["timestamp_start"] as? String, RFC3339.string(from: t0.addingTimeInterval(-60)),
                       "timed from its version 1 header")
        let record = try XCTUnwrap(records.first { $0.id == cut })
        let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: record.payload) as? [String: Any])
        let duration = try XCTUnwrap(fields["duration"] as? Double)
        XCTAssertEqual(fields["overlap_duration"] as? Double, 2)
        XCTAssertEqual(fields["timestamp_start"] as? String, RFC3339.string(from: t0))
        XCTAssertEqual(fields["timestamp_end"] as? String, RFC3339.string(from: t0.addingTimeInterval(duration)))
        XCTAssertEqual(duration, try XCTUnwrap(OggOpusRepair.repair(cutPages)).duration, accuracy: 1e-9)
        XCTAssertGreaterThan(duration, 4.3)
        let audio = try XCTUnwrap(Data(base64Encoded: fields["audio_data"] as? String ?? ""))
        _ = try OpusTools.info(audio, in: work)
        XCTAssertEqual(Double(try OpusTools.decode(audio, in: work).count), duration * Double(rate), accuracy: 1)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), [newer],
                       "every journal dealt with, but the newer version's")
    }

    /// The header in a journal file's name reads back as written, times to the last bit;
    /// names that hold no header are told apart from a newer version's journal.
    func testAJournalFileNameHoldsItsHeader() throws {
        let id = UUID()
        for (start, provisional) in [(1_800_000_000.123_456_7, nil),
                                     (0.1 + 0.2, ProvisionalTime(bootID: "3f1c2b8e-0000-4000-8000-000000000001", bootTime: 1_234.567_890_123)),
                                     (-1.5e-7, nil)] as [(Double, ProvisionalTime?)] {
            var header = JournalHeader(beginning: ChunkBeginning(id: id, start: Date(timeIntervalSince1970: start),
                                                                 overlapFrames: 32_000, sampleRate: rate),
                                       bitrate: 24_000, provisional: provisional)
            header.start = start
            let name = try header.fileName()
            XCTAssertTrue(name.hasPrefix(id.uuidString.lowercased() + "_2_"), name)
            XCTAssertLessThan(name.utf8.count, 144, "short enough for any Linux file system (eCryptfs: 143)")
            XCTAssertEqual(JournalHeader.parse(fileName: name), .journal(header), name)
        }
        var odd = JournalHeader(beginning: ChunkBeginning(id: id, start: t0, overlapFrames: 0, sampleRate: rate), bitrate: 16_000,
                                provisional: ProvisionalTime(bootID: "not_a/uuid", bootTime: 1))
        XCTAssertThrowsError(try odd.fileName(), "a boot id that cannot be read back from a name")
        odd.bootID = nil
        odd.bootTime = nil
        XCTAssertEqual(JournalHeader.parse(fileName: try odd.fileName()), .journal(odd))
        XCTAssertEqual(JournalHeader.parse(fileName: "\(id.uuidString.lowercased())_3_anything.ogg"), .unknownVersion(id))
        for name in ["\(id.uuidString.lowercased()).ogg", "\(id.uuidString.lowercased()).json", "x_2_s1_o0_r16000_b16000.ogg",
                     "\(id.uuidString.lowercased())_2_s1_o0_r16000.ogg", "\(id.uuidString.lowercased())_2_s1_o0_r16000_b16000_kabc.ogg",
                     "\(id.uuidString.lowercased())_2_snan_o0_r16000_b16000.ogg", "\(id.uuidString.lowercased())_2_s1_s2_r16000_b16000.ogg"] {
            XCTAssertEqual(JournalHeader.parse(fileName: name), .other, name)
        }
    }

    /// A chunk whose time was provisional when it began keeps its boot clock in the journal,
    /// so the chunk recovered after a kill is held and corrected like any other.
    func testAProvisionalChunkIsRecoveredWithItsBootClock() throws {
        let work = try TemporaryDirectory()
        let id = UUID()
        let provisional = ProvisionalTime(bootID: "3f1c2b8e-0000-4000-8000-000000000001", bootTime: 1_234.5)
        let snapshot = work.file("snapshot")
        let (_, header) = try killedJournal(seconds: 3, id: id, provisional: provisional, into: snapshot, work: work)
        XCTAssertEqual(header.provisional, provisional)

        let database = try AgentDatabase(path: work.file("queue.sqlite"))
        let recovered = JournalRecovery(journal: AudioJournal(directory: snapshot, logger: logger), queue: database.recordQueue, logger: logger).run()
        XCTAssertEqual(recovered.map(\.chunk.id), [id])
        XCTAssertEqual(recovered.first?.provisional, provisional)

        // A chunk whose time was believed has none.
        let (_, believed) = try killedJournal(seconds: 1, into: work.file("snapshot2"), work: work)
        XCTAssertNil(believed.provisional)
    }
}

/// The journal inside the running stream (real ALSA capture through the file plugin).
extension MicrophoneStreamTests {
    /// A chunk waits in the writer (the queue refuses it: disk full) when the stream is
    /// stopped, as the supervisor's restart does: its journal stays, and the next
    /// stream writes it before capturing.
    func testChunksWaitingAtStopAreWrittenByTheNextStreamFromTheJournal() throws {
        let directory = try TemporaryDirectory()
        let rig = try ALSARig(input: try SpeechInput.make(seconds: 40, in: directory.path))
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let journalDirectory = AudioJournal.directory(forDatabase: database.path)
        let sink = RefusingQueue(database)
        sink.setRefusing(true)
        let progress = ScriptedCapture.Progress()
        var config = MicrophoneConfig()
        config.device = rig.device
        let first = MicrophoneStream(config: config, queue: sink, clock: ManualClock(t0), logger: logger,
                                     captureFactory: onceFactory(limitSeconds: 35, afterLimit: .quiet,
                                                                                         progress: progress, calls: CallCounter()),
                                     tuning: MicrophoneTuning(deviceRetry: Backoff(base: 0.05, cap: 0.2), maxClockSkew: nil),
                                     journal: .init(directory: journalDirectory, queue: database.recordQueue))
        first.start()
        try waitUntil("35 s read and the first chunk refused", timeout: 60) {
            progress.frames == 35 * rate && first.liveness().code == .storageFull
        }
        first.stop()
        XCTAssertEqual(first.stats().chunksWaiting, 2, "the full chunk and the one stopped")
        XCTAssertGreaterThan(first.stats().journalBytes, 60_000)
        XCTAssertEqual(try database.recordQueue.count(stream: .microphone, status: .pending), 0)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: journalDirectory).count, 2, "two chunks, a file each")

        sink.setRefusing(false)
        let second = MicrophoneStream(config: config, queue: sink, clock: ManualClock(t0), logger: logger,
                                      captureFactory: { device, _ throws(AudioCaptureError) in
                                          throw AudioCaptureError(kind: .notFound, device: device, detail: "no device in this test")
                                      },
                                      tuning: MicrophoneTuning(deviceRetry: Backoff(base: 0.05, cap: 0.2), maxClockSkew: nil),
                                      journal: .init(directory: journalDirectory, queue: database.recordQueue))
        second.start()
        try waitUntil("both chunks written from the journal", timeout: 30) { second.stats().chunksWritten == 2 }
        second.stop()
        let chunks = try chunks(in: database)
        XCTAssertEqual(chunks.map(\.duration), [30, 7])
        XCTAssertEqual(chunks.map(\.overlap), [0, 2])
        XCTAssertEqual(chunks[1].start.timeIntervalSince(chunks[0].start), 28, accuracy: 1e-6, "timed as when captured")
        for chunk in chunks {
            XCTAssertEqual(Double(try OpusTools.decode(chunk.data, in: directory).count), chunk.duration * Double(rate), accuracy: 1)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: journalDirectory), [])
    }

    /// A page's fdatasync runs on the thread that asks for it (the capture thread, between
    /// two reads), not on a queue: it is done, and counted, when `syncDue` returns.
    func testPagesAreSyncedBeforeSyncDueReturns() throws {
        let directory = try TemporaryDirectory()
        let journal = AudioJournal(directory: directory.file("journal"), logger: logger, syncInterval: .zero)
        try journal.prepare()
        let file = try journal.begin(ChunkBeginning(start: t0, overlapFrames: 0, sampleRate: rate), bitrate: 16_000)
        journal.durability.waitForSyncs()
        XCTAssertEqual(journal.durability.currentStats().syncs, 1, "the directory (the header is the file's name)")
        let page = [UInt8](repeating: 7, count: 2_000)
        page.withUnsafeBytes { file.append($0) }
        page.withUnsafeBytes { file.append($0) }
        XCTAssertEqual(journal.durability.currentStats().syncs, 1, "a block's pages are appended, not synced one by one")
        journal.durability.syncDue()
        XCTAssertEqual(journal.durability.currentStats().syncs, 2, "both pages in one sync, done when syncDue returns")
        XCTAssertGreaterThan(journal.durability.currentStats().longestUnsynced, .zero)
        journal.durability.syncDue()
        XCTAssertEqual(journal.durability.currentStats().syncs, 2, "nothing waiting, no sync")
        // The last pages: their sync is the queue's, as it links the file in (one sync, and
        // one file-system journal commit, per chunk instead of two), or, for a chunk left
        // waiting, `chunkWaits`'s (JournalDurabilityTests).
        page.withUnsafeBytes { file.append($0) }
        file.pagesComplete()
        journal.durability.syncDue()
        XCTAssertEqual(journal.durability.currentStats().syncs, 2, "a finished chunk is not synced by the journal")
        journal.remove(file.id)
    }

    /// Once a chunk is in the queue its journal is gone; the counters say what was written.
    func testAWrittenChunkLeavesNoJournal() throws {
        let directory = try TemporaryDirectory()
        let rig = try ALSARig(input: try SpeechInput.make(seconds: 12, in: directory.path))
        let database = try AgentDatabase(path: directory.file("queue.sqlite"))
        let journalDirectory = AudioJournal.directory(forDatabase: database.path)
        let progress = ScriptedCapture.Progress()
        var config = MicrophoneConfig()
        config.device = rig.device
        config.journalSyncSeconds = 60   // no periodic page sync in this test: the count is exact
        let stream = MicrophoneStream(config: config, queue: database.recordQueue, clock: ManualClock(t0), logger: logger,
                                      captureFactory: onceFactory(limitSeconds: 10, afterLimit: .quiet,
                                                                                          progress: progress, calls: CallCounter()),
                                      tuning: MicrophoneTuning(deviceRetry: Backoff(base: 0.05, cap: 0.2), maxClockSkew: nil),
                                      journal: .init(directory: journalDirectory, queue: database.recordQueue))
        stream.start()
        try waitUntil("10 s read", timeout: 60) { progress.frames == 10 * rate }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: journalDirectory).count, 1, "the chunk in progress: one file")
        stream.stop()
        XCTAssertEqual(try database.recordQueue.count(stream: .microphone, status: .pending), 1)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: journalDirectory), [])
        let stats = stream.stats()
        XCTAssertGreaterThan(stats.journalBytes, 15_000)
        // The directory (the file's name is its header); the finished chunk's pages were
        // synced by the queue as it linked the file in.
        XCTAssertEqual(stats.journalSyncs, 1, "the directory; the last pages are the queue's to sync")
        XCTAssertEqual(try database.recordQueue.records(stream: .microphone).count, 1)
    }
}
