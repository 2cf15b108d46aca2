import AgentCore
import Capture
import Foundation
import Logging
import Rigs

/// `ariata-bench journal [--seconds N] [--encode-seconds M] [--dir D]`: what the audio
/// journal costs and what it saves.
///
/// 1. libopusenc's delays: M seconds of speech (default 300) encoded into 30 s chunks with
///    its defaults and with the journal's settings, each chunk's pages going to a real
///    journal file: bytes per chunk, pages per chunk, and the audio given to the encoder
///    but not yet in a page on disk (what a SIGKILL would lose besides the ALSA buffer),
///    sampled every 0.5 s of input.
/// 2. The stream with the journal on, fed at real-time pace for N seconds (default 60)
///    through the ALSA file plugin: journal bytes and fsyncs per minute.
enum AudioJournalBench {
    static func run(seconds: Int, encodeSeconds: Int, work directory: WorkDirectoryOption) throws {
        let work = try directory.workDirectory("journal")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let pcm = try AudioBench.makeSpeech(seconds: max(seconds, encodeSeconds), in: work)

        print("libopusenc delays, \(encodeSeconds) s of speech in 30 s chunks at 16 kbit/s:")
        let variants: [(String, OggOpusChunkEncoder.Settings)] = [
            ("libopusenc defaults (decision 96000, muxing 48000)", .init(decisionDelay: 96_000, muxingDelay: 48_000, pageEveryBlock: false)),
            ("decision 0, muxing 48000 (pages of 1 s)", .init(decisionDelay: 0, muxingDelay: 48_000, pageEveryBlock: false)),
            ("decision 0, muxing 24000 (pages of 0.5 s)", .init(decisionDelay: 0, muxingDelay: 24_000, pageEveryBlock: false)),
            ("decision 0, muxing 9600 (pages of 0.2 s)", .init(decisionDelay: 0, muxingDelay: 9_600, pageEveryBlock: false)),
            ("decision 0, muxing 48000, page ended after each 2 s block (the journal's)", .init()),
        ]
        var baseline: Double?
        for (name, settings) in variants {
            let result = try encode(pcm: pcm, seconds: encodeSeconds, settings: settings, in: work)
            let base = baseline ?? result.bytesPerChunk
            baseline = base
            print(String(format: "  %@: %.0f bytes/chunk (%+.2f %%), %.1f pages/chunk; audio not yet on disk: mean %.2f s, worst %.2f s",
                         name, result.bytesPerChunk, (result.bytesPerChunk / base - 1) * 100, result.pagesPerChunk,
                         result.meanLag, result.worstLag))
        }

        print("stream with the journal, \(seconds) s at real-time pace through the ALSA file plugin:")
        let stream = try pacedStream(pcm: pcm, seconds: seconds, in: work)
        let minutes = stream.wall / 60
        let waited = stream.stats.journalLongestUnsynced.components
        print(String(format: "  journal: %.0f bytes/min, %.1f fsyncs/min (%d bytes, %d fsyncs in %.1f s); longest a page waited for its fsync: %.2f s; %d chunks written",
                     Double(stream.stats.journalBytes) / minutes, Double(stream.stats.journalSyncs) / minutes,
                     stream.stats.journalBytes, stream.stats.journalSyncs, stream.wall,
                     Double(waited.seconds) + Double(waited.attoseconds) / 1e18, stream.stats.chunksWritten))
    }

    struct EncodeResult {
        var bytesPerChunk: Double
        var pagesPerChunk: Double
        var meanLag: Double
        var worstLag: Double
    }

    static func encode(pcm: String, seconds: Int, settings: OggOpusChunkEncoder.Settings, in work: String) throws -> EncodeResult {
        let rate = 16_000
        let samples = try Data(contentsOf: URL(fileURLWithPath: pcm)).prefix(seconds * rate * 2)
        let pcmSamples = samples.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let journal = AudioJournal(directory: "\(work)/journal-\(UUID().uuidString.prefix(8))", logger: Logger(.bench))
        try journal.prepare()
        let chunkFrames = 30 * rate
        let block = ALSACapture.defaultWakeFrames // what the capture thread hands over
        var bytes = 0, pages = 0, chunks = 0
        var lags: [Double] = []
        var offset = 0
        while offset + chunkFrames <= pcmSamples.count {
            let beginning = ChunkBeginning(start: Date(), overlapFrames: 0, sampleRate: rate)
            let file = try journal.begin(beginning, bitrate: 16_000)
            let encoder = try OggOpusChunkEncoder(settings, journal: file)
            let path = file.path
            for start in stride(from: 0, to: chunkFrames, by: block) {
                try pcmSamples[(offset + start) ..< (offset + start + block)].withUnsafeBufferPointer { try encoder.append($0) }
                let onDisk = (try? Data(contentsOf: URL(fileURLWithPath: path))).flatMap(OggOpusRepair.repair)?.duration ?? 0
                lags.append(Double(start + block) / Double(rate) - onDisk)
            }
            let data = try encoder.finish()
            bytes += data.count
            pages += data.ranges(of: Data("OggS".utf8)).count
            chunks += 1
            journal.remove(beginning.id)
            offset += chunkFrames
        }
        journal.durability.waitForSyncs()
        return EncodeResult(bytesPerChunk: Double(bytes) / Double(chunks), pagesPerChunk: Double(pages) / Double(chunks),
                            meanLag: lags.reduce(0, +) / Double(lags.count), worstLag: lags.max() ?? 0)
    }

    static func pacedStream(pcm: String, seconds: Int, in work: String) throws -> (stats: MicrophoneStream.Stats, wall: Double) {
        let rig = try ALSARig(input: pcm, device: "ariata_journal_bench_mic")
        defer { withExtendedLifetime(rig) {} }
        let device = rig.device
        let database = try AgentDatabase(path: "\(work)/queue.sqlite")
        var microphone = MicrophoneConfig()
        microphone.device = device
        let start = Date()
        let stream = AudioBench.runStream(config: microphone, database: database, frames: seconds * 16_000,
                                          journal: .init(directory: AudioJournal.directory(forDatabase: database.path), queue: database.recordQueue),
                                          wrap: { PacedCapture($0) })
        return (stream.stats(), Date().timeIntervalSince(start))
    }
}

/// Hands out samples no faster than real time, in blocks of what one wake of the ALSA
/// device the daemon opens brings (2 s): the journal's fsync cadence depends on the wall
/// clock.
final class PacedCapture: AudioCapture {
    private let inner: any AudioCapture
    private let started = ContinuousClock.now
    private var delivered = 0

    init(_ inner: any AudioCapture) { self.inner = inner }

    var sampleRate: Int { inner.sampleRate }

    func read(into buffer: UnsafeMutableBufferPointer<Int16>) throws(AudioCaptureError) -> CaptureRead {
        let period = ALSACapture.defaultWakeFrames * sampleRate / 16_000
        let dueAt = started + .milliseconds((delivered + period) * 1_000 / sampleRate)
        let now = ContinuousClock.now
        if now < dueAt {
            let wait = (dueAt - now).components
            Thread.sleep(forTimeInterval: Double(wait.seconds) + Double(wait.attoseconds) / 1e18)
        }
        let result = try inner.read(into: UnsafeMutableBufferPointer(rebasing: buffer[0 ..< min(buffer.count, period)]))
        if case .frames(let count) = result { delivered += count }
        return result
    }

    func pendingFrames() -> Int { inner.pendingFrames() }

    var settingsDescription: String { inner.settingsDescription }

    func close() { inner.close() }
}
