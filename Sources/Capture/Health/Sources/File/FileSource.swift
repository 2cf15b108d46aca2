import AgentCore
import Foundation
import Logging
import Platform

/// Follows a file another program appends samples to, like `tail -F`, exactly once:
/// a `FileFollower` hands on its complete lines with their byte position, the line
/// processor makes records of them, and a `HealthCommitter` writes the records together
/// with the anchor (device, inode, byte offset after the last complete line consumed,
/// line number, fingerprint, CSV header) in one transaction. Until a commit, the file
/// itself is the buffer: a crash loses only the uncommitted position, and the lines are
/// read again after the restart.
///
/// The first start imports what the file already holds from the last `backfill_days`
/// days (the backfill), with progress in `status()`.
public final class FileSource: HealthSource {
    public let name: String
    let config: FileSourceSettings
    let serverMetrics: Set<String>?
    let queue: any HealthRecordQueue
    let clock: any WallClock
    let clockTrust: ClockTrust
    let logger: Logger
    let commitInterval: TimeInterval
    let batchSize: Int
    let counters: HealthSourceCounters

    public init(config: FileSourceSettings, serverMetrics: Set<String>? = nil, queue: any HealthRecordQueue,
                commitInterval: TimeInterval, batchSize: Int = 500, clock: any WallClock = SystemClock(),
                clockTrust: ClockTrust = .live(trustSystemClock: false), logger: Logger) {
        name = config.name
        self.config = config
        self.serverMetrics = serverMetrics
        self.queue = queue
        self.clock = clock
        self.clockTrust = clockTrust
        self.logger = logger
        self.commitInterval = commitInterval
        self.batchSize = batchSize
        counters = HealthSourceCounters(name: config.name, kind: .file, kindStatus: FileSourceStatus())
    }

    public func status() -> HealthSourceStatus { counters.snapshot() }

    public func run(until stop: Waker) {
        // An unset clock does not stop reading: samples dated from it are held and
        // corrected once it is set (ClockCorrection); their own times are kept.
        FileFollower(path: config.path, sourceName: name, counters: counters, logger: logger, stop: stop,
                     output: FileReading(self)).run()
    }
}

/// One run of a file source: what the follower's lines become (records, backfill
/// progress) and how they are committed. Lives on the source's thread only.
private final class FileReading: FileFollowerOutput {
    private let source: FileSource
    private let anchorKey: String
    private var processor: HealthLineProcessor
    private var committer: HealthCommitter
    /// The first import: lines ending before `end` are skipped when older than `cutoff`.
    private var backfill: (end: Int64, cutoff: Date)?
    private var backfillSamples = 0
    private var lastReportedDecile = -1

    init(_ source: FileSource) {
        self.source = source
        anchorKey = "file:" + source.config.path
        processor = HealthLineProcessor(format: source.config.format, sourceName: source.name, counters: source.counters,
                                        logger: source.logger, clockTrust: source.clockTrust,
                                        serverMetrics: source.serverMetrics)
        committer = HealthCommitter(queue: source.queue, interval: source.commitInterval, batchSize: source.batchSize,
                                    path: source.config.path, sourceName: source.name, counters: source.counters,
                                    logger: source.logger)
    }

    func resumePoint() throws -> FileFollower.Mark? {
        let config = source.config
        guard let anchor = try source.queue.anchor(for: anchorKey) else {
            // First start: import what the file already holds from the last backfill_days.
            if let identity = FileIdentity.of(path: config.path), identity.size > 0 {
                backfill = (identity.size, source.clock.now().addingTimeInterval(-Double(config.backfillDays) * 86_400))
                source.logger.info("health source \(source.name): importing the last \(config.backfillDays) days of \(config.path) (\(identity.size) bytes)")
                reportBackfill(done: 0)
            }
            return nil
        }
        let extra = FileAnchorExtra(json: anchor.extra)
        processor.parser.restore(state: extra?.parserState)
        if let end = extra?.backfillEnd, let cutoff = extra?.backfillCutoff, anchor.offset < end {
            backfill = (end, Date(timeIntervalSince1970: cutoff))
        }
        return FileFollower.Mark(device: anchor.device, inode: anchor.inode, offset: anchor.offset, line: anchor.line,
                                 fingerprint: extra?.fingerprintBytes ?? [])
    }

    func take(_ followed: FollowedLine) {
        committer.lineRead(movesAnchor: true)
        switch followed.line {
        case .overlong(_, let first):
            if first { processor.overlong(place: "\(followed.path):\(followed.number)") }
        case .text(let text, _):
            let inBackfill = backfill.map { followed.end <= $0.end } ?? false
            let before = committer.pending.count
            processor.process(text, place: "\(followed.path):\(followed.number)", now: source.clock.now(),
                              notBefore: inBackfill ? backfill?.cutoff : nil, into: &committer.pending)
            if inBackfill { backfillSamples += committer.pending.count - before }
        }
        if let end = backfill?.end, followed.end >= end {
            backfill = nil
            reportBackfill(done: end, total: end)
        }
    }

    func batchIsFull(backlog: Bool) -> Bool { committer.isFull(backlog: backlog) }

    var commitDueAt: TimeInterval? { committer.dueAt }

    func commit(force: Bool, at mark: () -> FileFollower.Mark) -> Bool {
        var committedTo: Int64?
        let committed = committer.commit(force: force) {
            let position = mark()
            committedTo = position.offset
            let extra = FileAnchorExtra(fingerprint: position.fingerprint, parserState: processor.parser.state,
                                        backfillEnd: backfill?.end, backfillCutoff: backfill?.cutoff.timeIntervalSince1970)
            return SourceAnchor(source: anchorKey, device: position.device, inode: position.inode,
                                offset: position.offset, line: position.line, extra: extra.json)
        }
        if committed, backfill != nil, let committedTo { reportBackfill(done: committedTo) }
        return committed
    }

    func dropUncommitted() { committer.dropUncommitted() }

    func caughtUp() {
        if backfill == nil { source.counters.update(FileSourceStatus.self) { $1.caughtUp = true } }
    }

    private func reportBackfill(done: Int64, total: Int64? = nil) {
        guard let total = total ?? backfill?.end else { return }
        let progress = BackfillProgress(bytesDone: done, bytesTotal: total, samples: backfillSamples)
        source.counters.update(FileSourceStatus.self) { $1.backfill = progress }
        let decile = Int(progress.fraction * 10)
        if decile != lastReportedDecile {
            lastReportedDecile = decile
            source.logger.info("health source \(source.name): backfill \(decile * 10)% (\(progress.bytesDone) of \(total) bytes, \(progress.samples) samples)")
        }
    }
}
