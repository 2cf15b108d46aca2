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
public final class MicrophoneStream: CaptureStream, @unchecked Sendable {
    // @unchecked: the capture state (device, chunker, buffers, `chunkTimes`) lives only on
    // the capture thread; what other threads read is behind `control`'s Mutex.
    public let stream = StreamName.microphone
    public let config: MicrophoneConfig
    public let sampleRate = 16_000
    /// Waits between attempts to open a failing device: 1 s doubling to 30 s, so a missing
    /// microphone costs a wake-up every half minute, not a spin.
    public static let deviceRetry = Backoff(base: 1, cap: 30)
    /// How often the chosen device is tried again while capture is on the fallback: what
    /// a microphone plugged back in waits at most before it is used again.
    public static let chosenDeviceRetry: TimeInterval = 5

    private let clock: any WallClock
    private let logger: Logger
    private let captureFactory: AudioCaptureFactory
    private let retry: Backoff
    private let chosenRetry: TimeInterval
    /// Seconds on a clock that never jumps: when the device machine retries.
    private let monotonicClock: @Sendable () -> TimeInterval
    private let maxClockSkew: TimeInterval?
    private let encoderSettings: OggOpusChunkEncoder.Settings
    private let writer: ChunkWriter
    private let journal: AudioJournal?
    private let knownRecords: (any RecordLookup)?
    /// Capture thread only: which chunks carry a provisional time (see ChunkTimes).
    private var chunkTimes: ChunkTimes
    /// Capture thread only: silent chunks dropped when `upload_silent` is off.
    private var silentChunks: SilentChunkFilter

    /// Where the audio journal lives and how to ask whether a recovered chunk is already
    /// in the queue.
    public struct Journaling: Sendable {
        public var directory: String
        public var knownRecords: any RecordLookup

        public init(directory: String, knownRecords: any RecordLookup) {
            self.directory = directory
            self.knownRecords = knownRecords
        }
    }

    private struct Control {
        var phase = Phase.idle
        var captureHealth: Liveness = .unhealthy(reason: "not started")
        var overruns = 0
        var opens = 0
        var silentDropped = 0
        var switches = 0
        var device = DeviceInUse(name: nil, reason: "not started", since: nil)
    }
    /// The device capture is on, why, and since when: `details()` for `status`.
    private struct DeviceInUse {
        var name: String?
        var reason: String
        var since: Date?
    }
    /// A stream starts once and stops once.
    private enum Phase {
        case idle
        case running(NamedThread)
        case stopped
    }
    private let control = Mutex(Control())

    /// - Parameters:
    ///   - captureFactory: opens the capture device; `ALSACapture.factory` for real use.
    ///   - retry: waits between attempts to open a failing device.
    ///   - chosenRetry: seconds between attempts at the chosen device while on the fallback.
    ///   - monotonicClock: the clock those retries are timed on.
    ///   - maxClockSkew: when the sample-counted capture time and the wall clock disagree
    ///     by more than this (NTP set the clock, the sound card's clock drifted), chunks not
    ///     yet begun are timed from the wall clock again. nil keeps the sample count only:
    ///     for recorded input that is read faster than real time (tests, benchmarks).
    ///   - journal: the audio journal; nil keeps chunks in progress in memory only.
    ///   - clockTrust: whether the wall clock can be believed; chunks timed from a clock
    ///     that cannot are written held, with their place on the boot clock.
    public init(config: MicrophoneConfig, sink: any RecordSink, clock: any WallClock = SystemClock(),
                logger: Logger, clockTrust: ClockTrust = .live(trustSystemClock: false), captureFactory: @escaping AudioCaptureFactory = ALSACapture.factory,
                retry: Backoff = MicrophoneStream.deviceRetry,
                chosenRetry: TimeInterval = MicrophoneStream.chosenDeviceRetry,
                monotonicClock: @escaping @Sendable () -> TimeInterval = Monotonic.seconds, maxClockSkew: TimeInterval? = 2,
                journal: Journaling? = nil) {
        self.config = config
        self.clock = clock
        self.logger = logger
        self.captureFactory = captureFactory
        self.retry = retry
        self.chosenRetry = chosenRetry
        self.monotonicClock = monotonicClock
        self.maxClockSkew = maxClockSkew
        self.encoderSettings = .init(sampleRate: sampleRate, bitrate: config.bitrate, complexity: config.complexity,
                                     adaptive: .init(quietBitrate: config.quietBitrate, soundThresholdDB: Double(config.soundThresholdDB)))
        let audioJournal = journal.map {
            AudioJournal(directory: $0.directory, logger: logger, syncInterval: .seconds(config.journalSyncSeconds))
        }
        self.journal = audioJournal
        self.knownRecords = journal?.knownRecords
        self.chunkTimes = ChunkTimes(trust: clockTrust)
        self.silentChunks = SilentChunkFilter(thresholdDB: config.silenceThresholdDB, dropsSilent: !config.uploadSilent)
        self.writer = ChunkWriter(sink: sink, logger: logger, written: { id in audioJournal?.remove(id) })
    }

    // MARK: CaptureStream

    public func start() {
        control.withLock { control in
            guard case .idle = control.phase else { return }
            do {
                control.phase = .running(try NamedThread(name: "ariata-mic") { [self] waker in runCapture(until: waker) })
            } catch {
                control.phase = .stopped
                control.captureHealth = .unhealthy(reason: "cannot start the capture thread: \(error)")
                logger.error("microphone: cannot start the capture thread: \(error)")
            }
        }
    }

    public func stop() {
        let thread = control.withLock { control -> NamedThread? in
            defer { control.phase = .stopped }
            if case .running(let thread) = control.phase { return thread }
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
        journal?.waitForSyncs()
    }

    public func liveness() -> Liveness {
        let captureHealth = control.withLock { $0.captureHealth }
        guard captureHealth.isHealthy else { return captureHealth }
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
        [StreamCounter.silentChunksDropped: control.withLock { $0.silentDropped }]
    }

    /// The device in use (empty while none is open), why, and since when.
    public func details() -> [String: String] {
        let device = control.withLock { $0.device }
        var details = [StreamCounter.deviceInUse: device.name ?? "", StreamCounter.deviceReason: device.reason]
        if let since = device.since { details[StreamCounter.deviceSince] = RFC3339.string(from: since) }
        return details
    }

    /// The device capture is on now (nil while none is open): for tests.
    public var deviceInUse: String? { control.withLock { $0.device.name } }

    public func stats() -> Stats {
        let (overruns, opens, silentDropped, switches) = control.withLock { ($0.overruns, $0.opens, $0.silentDropped, $0.switches) }
        let writes = writer.current()
        let journalStats = journal?.currentStats() ?? AudioJournal.Stats()
        return Stats(chunksWritten: writes.written, chunksWaiting: writes.waiting, overruns: overruns, deviceOpens: opens, deviceSwitches: switches,
                     journalBytes: journalStats.bytes, journalSyncs: journalStats.syncs,
                     journalLongestUnsynced: journalStats.longestUnsynced, silentChunksDropped: silentDropped)
    }

    // MARK: The capture thread

    /// Captures until `waker` is woken (by `stop()`). Which device, when to open it and what
    /// that means is `CaptureDeviceMachine`'s; this reads blocks and hands them on.
    private func runCapture(until waker: Waker) {
        let readFrames = ALSACapture.defaultWakeFrames // up to 2 s per read: what one wake brings
        let buffer = UnsafeMutableBufferPointer<Int16>.allocate(capacity: readFrames)
        defer { buffer.deallocate() }
        recoverJournal()
        var chunker = makeChunker()
        var devices = CaptureDeviceMachine(config: config, sampleRate: sampleRate, factory: captureFactory, retry: retry,
                                           chosenRetry: chosenRetry, clock: monotonicClock) { event in
            self.apply(event, to: &chunker)
        }
        while true {
            // The journal's fsyncs, between two reads: after the last block's pages are in.
            journal?.syncDue()
            if waker.isWoken {
                devices.release()
                return
            }
            // An unset clock does not stop capture: chunks timed from it are held with
            // their boot-clock time and corrected once the clock is set.
            let current: any AudioCapture
            switch devices.next() {
            case .read(let capture):
                current = capture
            case .wait(let seconds):
                _ = waker.wait(for: nil, timeout: seconds)
                continue
            }
            do throws(AudioCaptureError) {
                // Cleared before each read: a source that writes nothing (the ALSA file
                // plugin past the end of its input) must not replay the previous block.
                buffer.update(repeating: 0)
                switch try current.read(into: buffer) {
                case .frames(0):
                    continue
                case .frames(let count):
                    append(UnsafeBufferPointer(rebasing: buffer[0 ..< count]), pending: current.pendingFrames(), to: &chunker)
                case .overrun:
                    let total = control.withLock { control -> Int in
                        control.overruns += 1
                        return control.overruns
                    }
                    logger.warning("microphone overrun: samples were lost; the chunk in progress ends here and the next starts after the gap",
                                   metadata: ["overruns": "\(total)"])
                    emit { try chunker.finish() }
                case .ended:
                    devices.inputEnded()
                }
            } catch {
                devices.readFailed(error)
            }
        }
    }

    /// The chunker of one run of the capture thread: each chunk it begins gets its journal
    /// and its place among the provisional times.
    private func makeChunker() -> AudioChunker<OggOpusChunkEncoder> {
        AudioChunker<OggOpusChunkEncoder>(
            sampleRate: sampleRate, chunkFrames: config.chunkSeconds * sampleRate,
            overlapFrames: config.overlapSeconds * sampleRate,
            makeEncoder: { [encoderSettings] beginning in
                let provisional = self.chunkTimes.began(beginning.id, start: beginning.start)
                return try OggOpusChunkEncoder(encoderSettings, journal: self.openJournal(beginning, provisional: provisional))
            })
    }

    /// Hands a block just read to the chunker, timed from the wall clock less what the
    /// device still holds (`pending` frames): a run begins there, and one whose sample
    /// count has parted from the clock by more than `maxClockSkew` follows the clock again.
    private func append(_ block: UnsafeBufferPointer<Int16>, pending: Int, to chunker: inout AudioChunker<OggOpusChunkEncoder>) {
        let lag = Double(pending + block.count) / Double(sampleRate)
        let now = clock.now()
        let firstSampleTime = now.addingTimeInterval(-lag)
        if !chunker.isRunning {
            emit { try chunker.begin(at: firstSampleTime) }
            chunkTimes.anchored(now: now, lag: lag)
        } else if let maxClockSkew, let counted = chunker.nextFrameTime,
                  abs(counted.timeIntervalSince(firstSampleTime)) > maxClockSkew {
            logger.info("microphone timestamps follow the wall clock again",
                        metadata: ["skew_seconds": "\(counted.timeIntervalSince(firstSampleTime))"])
            chunker.retime(nextFrameAt: firstSampleTime)
            chunkTimes.anchored(now: now, lag: lag)
        }
        if !emit({ try chunker.append(block) }) {
            // The encoders' state is unknown after a failure: drop the run, the next block
            // starts a new one.
            for dropped in (try? chunker.finish()) ?? [] { journal?.remove(dropped.id) }
        }
    }

    /// What the device machine reports, made known: counters, the log, `status`'s device
    /// and health; a switch or a release ends the chunk in progress.
    private func apply(_ event: CaptureDeviceMachine.Event, to chunker: inout AudioChunker<OggOpusChunkEncoder>) {
        switch event {
        case .opened(let device, let settings):
            control.withLock { $0.opens += 1 }
            logger.info("microphone capture started", metadata: ["device": "\(device)", "settings": "\(settings)"])
        case .runEnds:
            emit { try chunker.finish() }
        case .switched(let device, let reason):
            // Away from the chosen device is a warning; back to it, a notice.
            control.withLock { $0.switches += 1 }
            logger.log(level: device == config.device ? .notice : .warning,
                       "microphone switched to '\(device)': \(reason); the chunk in progress ended at the switch",
                       metadata: ["device": "\(device)", "chosen": "\(config.device)"])
        case .inUse(let device, let reason):
            setDevice(device, reason: reason)
        case .health(let health):
            setCaptureHealth(health)
        }
    }

    /// Runs a chunker step and hands the chunks it finished to the writer. An encoder
    /// failure loses the chunks in progress, not the stream; it returns false then.
    @discardableResult
    private func emit(_ step: () throws -> [AudioChunk]) -> Bool {
        let chunks: [AudioChunk]
        do {
            chunks = try step()
        } catch {
            logger.error("microphone chunk lost: encoding failed", metadata: ["error": "\(error)"])
            return false
        }
        for finished in chunks {
            let chunk: AudioChunk
            switch silentChunks.pass(finished) {
            case .keep(let kept):
                chunk = kept
            case .drop(let firstOfEpisode):
                dropSilent(finished, firstOfEpisode: firstOfEpisode)
                continue
            }
            do {
                var record = try MicrophoneRecord.make(chunk, bitrate: config.bitrate,
                                                       adaptive: .init(quietBitrate: config.quietBitrate, soundThresholdDB: config.soundThresholdDB),
                                                       silenceThresholdDB: config.silenceThresholdDB,
                                                       journalFile: journal?.oggPath(chunk.id))
                // Timed from a clock that cannot be believed (1970, or not yet NTP): the
                // queue holds it until the daemon corrects its time (ClockCorrection).
                record.provisional = chunkTimes.take(chunk.id)
                writer.write(record)
            } catch {
                logger.error("microphone chunk lost: cannot build its record", metadata: ["error": "\(error)"])
                journal?.remove(chunk.id)
            }
        }
        return true
    }

    /// A silent chunk `upload_silent = false` drops: never stored, its journal removed,
    /// counted for `status`, and said in the log once per run of silent chunks.
    private func dropSilent(_ chunk: AudioChunk, firstOfEpisode: Bool) {
        journal?.remove(chunk.id)
        _ = chunkTimes.take(chunk.id)
        let total = control.withLock { control -> Int in
            control.silentDropped += 1
            return control.silentDropped
        }
        guard firstOfEpisode else { return }
        logger.notice("microphone: silent chunks are dropped until sound returns ([microphone] upload_silent = false); each is counted in 'ariata-agent status'",
                      metadata: ["average_db_level": "\(chunk.level?.reported ?? AudioLevel.floor)",
                                 "silence_threshold_db": "\(config.silenceThresholdDB)",
                                 "timestamp_start": "\(RFC3339.string(from: chunk.start))",
                                 "dropped_since_start": "\(total)"])
    }

    /// The journal of a chunk that begins; nil (the chunk is then in memory only) when there
    /// is no journal or it cannot be written, which must not stop capture.
    private func openJournal(_ beginning: ChunkBeginning, provisional: ProvisionalTime?) -> JournalFile? {
        guard let journal else { return nil }
        do {
            return try journal.begin(beginning, bitrate: config.bitrate, provisional: provisional)
        } catch {
            logger.error("audio journal: cannot start the journal of a chunk; it is held in memory only until it is in the queue",
                         metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Before capture begins: what the last process or the last run of this stream left in
    /// the journal goes to the queue first (through the writer, so a full disk keeps it
    /// waiting, journal and all).
    private func recoverJournal() {
        guard let journal, let knownRecords else { return }
        do {
            try journal.prepare()
        } catch {
            logger.error("audio journal off: \(error)")
            return
        }
        for recovered in JournalRecovery(journal: journal, knownRecords: knownRecords, logger: logger).run() {
            let chunk = recovered.chunk
            logger.notice("microphone chunk recovered from the audio journal",
                          metadata: ["id": "\(chunk.id)", "timestamp_start": "\(RFC3339.string(from: chunk.start))",
                                     "duration": "\(chunk.duration)", "overlap": "\(chunk.overlapDuration)",
                                     "cut_off": "\(recovered.wasCut)"])
            do {
                var record = try MicrophoneRecord.make(chunk, bitrate: recovered.bitrate)
                // A chunk that began on a clock that could not be believed is held with the
                // boot clock its journal kept, and corrected like any other; one from a
                // journal without it (an older agent) and dated before 2000 is held from an
                // unknown boot (never sent with that time).
                if let provisional = recovered.provisional {
                    record.provisional = provisional
                } else if CaptureTimeRule.clockLooksUnset(chunk.start) {
                    record.provisional = ProvisionalTime(bootID: ProvisionalTime.unknownBoot, bootTime: 0)
                }
                writer.write(record)
            } catch {
                logger.error("microphone chunk from the journal: cannot build its record; journal kept",
                             metadata: ["id": "\(chunk.id)", "error": "\(error)"])
            }
        }
    }

    private func setDevice(_ name: String?, reason: String) {
        let now = clock.now()
        control.withLock { control in
            if control.device.name != name { control.device.since = name == nil ? nil : now }
            control.device.name = name
            control.device.reason = reason
        }
    }

    private func setCaptureHealth(_ health: Liveness) {
        let previous = control.withLock { control -> Liveness in
            defer { control.captureHealth = health }
            return control.captureHealth
        }
        guard previous != health else { return }
        if case .unhealthy(let reason, _) = health {
            logger.warning("microphone unhealthy: \(reason)")
        } else if !previous.isHealthy {
            logger.info("microphone healthy")
        }
    }
}
