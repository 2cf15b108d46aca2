import AgentCore
import Foundation
import Logging
import Platform
import Synchronization

/// The `microphone` stream: captures from ALSA on its own thread, encodes 30 s Ogg Opus
/// chunks overlapping by 2 s, and writes each finished chunk to the queue.
///
/// A device that is missing, busy, not permitted or lost makes the stream unhealthy with
/// the reason and it retries by itself; while the chosen device is missing, capture goes
/// on from `[microphone] fallback_device` and the chosen one is taken back when it
/// returns (`CaptureDeviceMachine`), each switch ending the chunk in progress; an overrun
/// ends the chunk in progress (the audio is no longer continuous) and capture goes on.
/// `stop()` finishes and writes the chunk in progress and releases the device before it
/// returns (a pause is a stop: the daemon's `StreamSupervisor` starts a new stream when it
/// ends).
///
/// With an audio journal, the pages of each chunk in progress are on disk as they are
/// encoded, and every start (of the process, or a restart by the supervisor)
/// first turns what a crash, a kill or an earlier stop left there into records.
///
/// The stream wires its parts and reports their status: the capture loop
/// (`AudioCaptureLoop`, with `CaptureDeviceMachine` and `CaptureDeviceReport`), chunk
/// assembly (`ChunkAssembly`, with the journal: `ChunkJournal`, `JournalDurability`),
/// chunk to record (`ChunkRecords`) and the writer (`ChunkWriter`).
/// docs/streams/microphone.md.
public final class MicrophoneStream: CaptureStream, @unchecked Sendable {
    // @unchecked: `loop` (the capture state) is used only on the capture thread; what
    // other threads read is behind Mutexes (`phase`, `status`, the writer's).
    public let stream = StreamName.microphone
    public let config: MicrophoneConfig
    public let tuning: MicrophoneTuning
    public var sampleRate: Int { tuning.sampleRate }

    private let logger: Logger
    private let writer: ChunkWriter
    private let journal: AudioJournal?
    private let status = MicrophoneStatus()
    private let loop: AudioCaptureLoop

    /// Where the audio journal lives and how to ask whether a recovered chunk is already
    /// in the queue.
    public struct Journaling: Sendable {
        public var directory: String
        public var queue: any RecordLookup

        public init(directory: String, queue: any RecordLookup) {
            self.directory = directory
            self.queue = queue
        }
    }

    /// A stream starts once and stops once.
    private enum Phase {
        case idle
        case running(NamedThread)
        case stopped
    }
    private let phase = Mutex(Phase.idle)

    /// - Parameters:
    ///   - clockTrust: whether the wall clock can be believed; chunks timed from a clock
    ///     that cannot are written held, with their place on the boot clock.
    ///   - captureFactory: opens the capture device; `ALSACapture.factory` for real use.
    ///   - tuning: the stream's internal timings and sizes (device retries, clock skew).
    ///   - monotonicClock: the clock the device retries are timed on.
    ///   - journal: the audio journal; nil keeps chunks in progress in memory only.
    ///   - gate: the quiet hours and muted places; audio they close is never encoded.
    public init(config: MicrophoneConfig, queue: any RecordSink, clock: any WallClock = SystemClock(),
                logger: Logger, clockTrust: ClockTrust = .live(trustSystemClock: false),
                captureFactory: @escaping AudioCaptureFactory = ALSACapture.factory,
                tuning: MicrophoneTuning = MicrophoneTuning(),
                monotonicClock: @escaping @Sendable () -> TimeInterval = Monotonic.seconds,
                journal: Journaling? = nil, gate: MicrophoneGate? = nil) {
        self.config = config
        self.tuning = tuning
        self.logger = logger
        let audioJournal = journal.map {
            AudioJournal(directory: $0.directory, logger: logger, syncInterval: .seconds(config.journalSyncSeconds))
        }
        self.journal = audioJournal
        let chunkJournal = ChunkJournal(journal: audioJournal, queue: journal?.queue, bitrate: config.bitrate, logger: logger)
        writer = ChunkWriter(queue: queue, logger: logger, maxBacklog: tuning.maxChunksWaiting,
                             written: { id in audioJournal?.remove(id) }, durability: audioJournal?.durability)
        loop = AudioCaptureLoop(
            config: config, tuning: tuning, captureFactory: captureFactory, monotonicClock: monotonicClock,
            assembly: ChunkAssembly(config: config, tuning: tuning, clock: clock, clockTrust: clockTrust, journal: chunkJournal, logger: logger),
            records: ChunkRecords(config: config, journal: chunkJournal, writer: writer, status: status, logger: logger),
            journal: chunkJournal,
            report: CaptureDeviceReport(chosen: config.device, status: status, clock: clock, logger: logger),
            status: status, gate: gate, logger: logger)
    }

    // MARK: CaptureStream

    public func start() {
        phase.withLock { phase in
            guard case .idle = phase else { return }
            do {
                phase = .running(try NamedThread(name: "ariata-mic") { [self] waker in loop.run(until: waker) })
            } catch {
                phase = .stopped
                status.setCaptureLiveness(.unhealthy(reason: "cannot start the capture thread: \(error)"))
                logger.error("microphone: cannot start the capture thread: \(error)")
            }
        }
    }

    public func stop() {
        let thread = phase.withLock { phase -> NamedThread? in
            defer { phase = .stopped }
            if case .running(let thread) = phase { return thread }
            return nil
        }
        thread?.stop()
        writer.flush()
        let writes = writer.current()
        if writes.waiting > 0 {
            if let journal {
                logger.warning("microphone chunks not written at shutdown: they stay in the audio journal and are written at the next start",
                               metadata: ["count": "\(writes.waiting)", "journal": "\(journal.directory)",
                                          "error": "\(writes.lastError ?? "?")"])
            } else {
                logger.error("microphone chunks not written at shutdown",
                             metadata: ["count": "\(writes.waiting)", "error": "\(writes.lastError ?? "?")"])
            }
        }
        journal?.durability.waitForSyncs()
    }

    public func liveness() -> Liveness {
        let captureLiveness = status.current().captureLiveness
        guard captureLiveness.isHealthy else { return captureLiveness }
        let writes = writer.current()
        if let error = writes.lastError {
            return .unhealthy(reason: "cannot write chunks to the queue (\(writes.waiting) waiting): \(error)",
                              code: writes.storageFull ? .storageFull : nil)
        }
        return .healthy
    }

    /// Counters for `status` and tests.
    public struct Stats: Sendable, Equatable {
        public var chunksWritten: Int
        public var chunksWaiting: Int
        public var overruns: Int
        public var deviceOpens: Int
        /// Switches to the fallback device and back (each ends the chunk in progress).
        public var deviceSwitches: Int
        /// Ogg bytes written to the audio journal and fsyncs made for it.
        public var journalBytes: Int
        public var journalSyncs: Int
        /// The longest journal bytes waited for their fsync.
        public var journalLongestUnsynced: Duration
        /// Silent chunks dropped at capture (`upload_silent = false`).
        public var silentChunksDropped: Int
    }

    public func counters() -> [String: Int] {
        [StreamCounter.silentChunksDropped: status.current().silentDropped]
    }

    /// The device in use (empty while none is open), why, and since when.
    public func details() -> [String: String] {
        let device = status.current().device
        var details = [StreamCounter.deviceInUse: device.name ?? "", StreamCounter.deviceReason: device.reason]
        if let since = device.since { details[StreamCounter.deviceSince] = RFC3339.string(from: since) }
        return details
    }

    /// The device capture is on now (nil while none is open): for tests.
    public var deviceInUse: String? { status.current().device.name }

    public func stats() -> Stats {
        let counted = status.current()
        let writes = writer.current()
        let journalStats = journal?.durability.currentStats() ?? JournalDurability.Stats()
        return Stats(chunksWritten: writes.written, chunksWaiting: writes.waiting, overruns: counted.overruns,
                     deviceOpens: counted.opens, deviceSwitches: counted.switches,
                     journalBytes: journalStats.bytes, journalSyncs: journalStats.syncs,
                     journalLongestUnsynced: journalStats.longestUnsynced, silentChunksDropped: counted.silentDropped)
    }
}
