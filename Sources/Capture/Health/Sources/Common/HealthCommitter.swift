import AgentCore
import Foundation
import Logging
import Platform

/// Writes what a health source has read to the queue: its records and, for a file, the
/// anchor (where it has read to) in one transaction, so a line is never committed twice
/// nor skipped. It batches: a commit is due `interval` seconds after the first line not
/// yet committed, or at once when a batch is full. A commit the queue refuses makes the
/// source unhealthy (E004 when the disk is full) and is tried again after
/// `HealthSourceTuning.retry`; what was read stays pending (a serial source drops the
/// oldest beyond `holdAtMost`) unless the source drops it to read it again
/// (`dropUncommitted`: a file is its own buffer).
///
/// Lives on the source's thread only.
struct HealthCommitter {
    /// Records per commit while working through a backlog: each commit costs an fsync and
    /// that, not parsing, is then the limit.
    static let bulkBatchSize = 5_000
    /// Lines read without a record (old, bad, headers) that still move the anchor.
    static let linesPerAnchorCommit = 5_000

    let queue: any RecordSink
    let interval: TimeInterval
    let batchSize: Int
    /// Pending records kept while the queue refuses writes; nil: no limit.
    let holdAtMost: Int?
    /// What the source reads, for the unhealthy reason.
    let path: String
    let sourceName: String
    let counters: HealthSourceCounters
    let logger: Logger

    /// Records read and not yet committed.
    var pending: [NewRecord] = []
    /// Lines read since the last commit that move the anchor.
    private var linesSinceCommit = 0
    /// Monotonic time of the first line not yet committed.
    private var dirtySince: TimeInterval?
    /// Monotonic time before which a refused commit is not tried again.
    private var retryAt: TimeInterval?
    /// The health a refusal set; the next commit that goes through clears it.
    private var refusal: Liveness?

    init(queue: any RecordSink, interval: TimeInterval, batchSize: Int, holdAtMost: Int? = nil, path: String,
         sourceName: String, counters: HealthSourceCounters, logger: Logger) {
        self.queue = queue
        self.interval = interval
        self.batchSize = max(1, batchSize)
        self.holdAtMost = holdAtMost
        self.path = path
        self.sourceName = sourceName
        self.counters = counters
        self.logger = logger
    }

    private var isEmpty: Bool { pending.isEmpty && linesSinceCommit == 0 }

    /// After each line read. `movesAnchor`: the line counts even without a record (a
    /// file's position moves with it; a serial port has none).
    mutating func lineRead(movesAnchor: Bool) {
        if movesAnchor { linesSinceCommit += 1 }
        if dirtySince == nil, !isEmpty { dirtySince = Monotonic.now }
    }

    /// A batch is full: commit now rather than at the end of the interval (not while a
    /// refusal's wait runs). `backlog`: more is waiting to be read, so batches are bigger.
    func isFull(backlog: Bool) -> Bool {
        if let retryAt, Monotonic.now < retryAt { return false }
        return pending.count >= (backlog ? Self.bulkBatchSize : batchSize) || linesSinceCommit >= Self.linesPerAnchorCommit
    }

    /// When a commit is due (monotonic): when a refusal's wait ends, else `interval` after
    /// the first line not yet committed; nil with nothing to commit.
    var dueAt: TimeInterval? {
        guard !isEmpty else { return nil }
        return retryAt ?? dirtySince.map { $0 + interval }
    }

    var isDue: Bool { dueAt.map { Monotonic.now >= $0 } ?? false }

    /// Writes the pending records and `anchor()` (asked only when there is something to
    /// commit) in one transaction. `force`: move the anchor even when no line was read since
    /// the last commit (a file started over). False when the queue refused.
    mutating func commit(force: Bool = false, anchor: () -> SourceAnchor?) -> Bool {
        if force { linesSinceCommit = max(linesSinceCommit, 1) }
        guard !isEmpty else {
            dirtySince = nil
            return true
        }
        do {
            try queue.enqueue(pending, anchor: anchor())
        } catch {
            refused(error)
            return false
        }
        let written = pending.count
        let cleared = refusal
        counters.update {
            $0.samplesWritten += written
            if let cleared, $0.liveness == cleared { $0.liveness = .healthy }
        }
        refusal = nil
        pending.removeAll(keepingCapacity: true)
        linesSinceCommit = 0
        dirtySince = nil
        retryAt = nil
        return true
    }

    /// Forgets what was read since the last commit: the source reads it again.
    mutating func dropUncommitted() {
        pending.removeAll(keepingCapacity: true)
        linesSinceCommit = 0
        dirtySince = nil
    }

    private mutating func refused(_ error: any Error) {
        let health = Liveness.unhealthy(reason: "cannot write samples of \(path) to the queue: \(error)",
                                            code: QueueError.isStorageFull(error) ? .storageFull : nil)
        refusal = health
        counters.update { $0.liveness = health }
        let wait = HealthSourceTuning.retry.delay(afterFailures: 1)
        retryAt = Monotonic.now + wait
        logger.error("health source \(sourceName): commit failed, retrying in \(Int(wait)) s: \(error)")
        if let holdAtMost, pending.count > holdAtMost {
            let excess = pending.count - holdAtMost
            pending.removeFirst(excess)
            logger.error("health source \(sourceName): dropped the \(excess) oldest samples held while the queue refused writes")
        }
    }
}
