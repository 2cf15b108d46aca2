import Foundation
import Logging
import Synchronization

/// What one pass of the storage guard found and did.
public struct StorageGuardReport: Sendable, Equatable {
    /// Why the pass evicted: "free disk below the floor", "queue above its cap", "a write
    /// failed: disk full"; empty when nothing was due.
    public var reasons: [String] = []
    public var deletedUploaded = 0
    public var deletedFailed = 0
    /// Pending records deleted before upload (lost), per stream.
    public var evicted: [StreamName: Int] = [:]
    public var freeBytesBefore: Int64?
    public var freeBytesAfter: Int64?
    public var queueBytesBefore: Int64 = 0
    public var queueBytesAfter: Int64 = 0
    public var reserveReleased = false
    public var reserveHeldAfter = false
    /// The most disk one of the pass's own writes took before it gave space back: the
    /// database's growth at the first checkpoint, or the WAL of a deletion or of a vacuum
    /// step. This is what the reserve must cover on a full disk.
    public var peakOwnWriteBytes: Int64 = 0
    /// Set when the pass could not finish (a write failed even with the reserve released).
    public var error: String?

    public var evictedPending: Int { evicted.values.reduce(0, +) }
    public var deletedAny: Bool { deletedUploaded + deletedFailed + evictedPending > 0 }
}

/// Keeps the queue inside its limits ([storage] min_free_mb and max_queue_mb) by deleting
/// records in value order (`EvictionTier`), and keeps a reserve file so that it can still
/// delete when the disk is at 0 bytes free, whoever filled it. One pass at a time; a pass
/// never throws (a failure is reported and the next pass tries again).
public final class StorageGuard: Sendable {
    public let queue: SQLiteQueue
    public let reserve: StorageReserve
    private let limits: Mutex<StorageLimits>
    private let passLock = Mutex<Void>(())
    private let logger: Logger
    /// Smallest deletion, in payload bytes (a dozen audio chunks); a bigger shortfall is
    /// deleted in one go, up to 64 MiB, so that capture threads waiting on the queue's
    /// one writer are held up only briefly. With secure_delete FAST the WAL a deletion
    /// writes hardly depends on its size.
    private let sliceBytes: Int64

    public init(queue: SQLiteQueue, limits: StorageLimits, sliceBytes: Int64 = 1_048_576,
                logger: Logger = Logger(label: "ariata.storage")) {
        self.queue = queue
        self.reserve = StorageReserve(databasePath: queue.path, size: limits.reserveBytes)
        self.limits = Mutex(limits)
        self.sliceBytes = max(1, sliceBytes)
        self.logger = logger
    }

    /// A new configuration (SIGHUP): the floor and the cap apply from the next pass.
    public func update(_ new: StorageLimits) {
        limits.withLock { $0 = new }
    }

    public var currentLimits: StorageLimits { limits.withLock { $0 } }

    /// One pass: measures, evicts when the free disk is below the floor, the queue above
    /// its cap, or a write failed for lack of space; then makes the reserve again when
    /// there is room for it above the floor.
    @discardableResult
    public func pass() -> StorageGuardReport {
        passLock.withLock { _ in runPass() }
    }

    private func runPass() -> StorageGuardReport {
        let limits = currentLimits
        let floor = limits.effectiveFloor
        let cap = limits.queueCap(filesystemBytes: DiskSpace.totalBytes(at: queue.path))
        let writeFailed = queue.storagePressure.take()
        var report = StorageGuardReport()
        var free = freeBytes()
        report.freeBytesBefore = free
        report.queueBytesBefore = queue.fileBytes()

        // The floor counts the reserve as missing space until it is made, so a pass that
        // released it (or never could make it) evicts enough to make it again. After a
        // failed write it also asks for one slice more: the write that failed was bigger
        // than what looked free.
        let extra = writeFailed ? sliceBytes : 0
        func wantedFree() -> Int64 { floor + extra + (reserve.isHeld ? 0 : reserve.size) }
        func belowFloor() -> Bool { free.map { $0 < wantedFree() } ?? false }
        func overCap() -> Bool { queue.fileBytes() > cap }

        if free.map({ $0 < floor }) ?? false { report.reasons.append("free disk below the floor") }
        if overCap() { report.reasons.append("queue above its cap") }
        if writeFailed { report.reasons.append("a write failed: disk full") }
        if report.reasons.isEmpty && !belowFloor() {
            report.reserveHeldAfter = reserve.make()
            report.freeBytesAfter = freeBytes()
            report.queueBytesAfter = report.queueBytesBefore
            return report
        }
        if report.reasons.isEmpty {
            // Only the reserve is missing and there is no room to make it: evict for it
            // now, while SQLite still has room to delete.
            report.reasons.append("no room for the \(mb(reserve.size)) reserve")
        }

        // Short of space for SQLite's own writes: hand the reserve back first.
        if reserve.isHeld, writeFailed || (free ?? 0) < reserve.size {
            reserve.release()
            report.reserveReleased = true
            free = freeBytes()
        }
        do {
            // The WAL first: copying it in may grow the database by up to its size, and
            // once it is empty the deletions below write into space it has given back.
            report.peakOwnWriteBytes = try queue.checkpointWAL()
            free = freeBytes()
            let pageSize = Int64(try queue.pageSize())
            tiers: for tier in EvictionTier.allCases {
                while belowFloor() || overCap() {
                    // As much as is missing in one go (a cap lowered by 1 GB must not take
                    // a thousand rounds at start-up), at least a slice, at most 64 MiB.
                    let missing = max(free.map { wantedFree() - $0 } ?? 0, queue.fileBytes() - cap)
                    let slice = try queue.evictSlice(tier, maxBytes: min(max(sliceBytes, missing), 64 * StorageLimits.mebibyte))
                    if slice.records == 0 { continue tiers }
                    count(slice, tier: tier, into: &report)
                    report.peakOwnWriteBytes = max(report.peakOwnWriteBytes, queue.walBytes())
                    // Vacuum steps (each one's WAL) sized to a quarter of the space there
                    // is, so that captures writing at the same time still find room; at
                    // least 1 MiB, at most 256 MiB.
                    let room = max(freeBytes() ?? 0, 0)
                    let walPeak = try queue.compact(stepPages: Int(max(256, min(room / 4 / pageSize, 65_536))))
                    report.peakOwnWriteBytes = max(report.peakOwnWriteBytes, walPeak)
                    free = freeBytes()
                }
                break
            }
        } catch {
            report.error = "\(error)"
        }
        report.reserveHeldAfter = (freeBytes().map { $0 >= floor + reserve.size } ?? false) ? reserve.make() : reserve.isHeld
        report.freeBytesAfter = freeBytes()
        report.queueBytesAfter = queue.fileBytes()
        let stillShort = (report.freeBytesAfter.map { $0 < floor } ?? false) || report.queueBytesAfter > cap
        if report.deletedAny || report.error != nil || stillShort {
            announce(report, floor: floor, cap: cap)
        } else {
            // Emptying the WAL was enough (it counts towards the cap until checkpointed).
            logger.debug("storage guard: \(report.reasons.joined(separator: "; ")): nothing to delete after a checkpoint")
        }
        return report
    }

    private func count(_ slice: EvictedSlice, tier: EvictionTier, into report: inout StorageGuardReport) {
        switch tier {
        case .uploaded: report.deletedUploaded += slice.records
        case .failed: report.deletedFailed += slice.records
        case .pendingAudio, .pendingOther:
            for (stream, n) in slice.byStream { report.evicted[stream, default: 0] += n }
        }
    }

    private func freeBytes() -> Int64? { DiskSpace.availableBytes(at: queue.path) }

    /// The E004 line in the log and the event `status` shows: why, what went per stream,
    /// the totals so far, and what to do when it could not help.
    private func announce(_ report: StorageGuardReport, floor: Int64, cap: Int64) {
        let totals = (try? queue.evictedTotals()) ?? [:]
        func perStream(_ counts: [StreamName: Int64]) -> String {
            StreamName.allCases.map { "\($0.rawValue) \(counts[$0] ?? 0)" }.joined(separator: ", ")
        }
        var message = "storage guard (\(report.reasons.joined(separator: "; "))): "
            + "free \(mb(report.freeBytesBefore ?? 0)) → \(mb(report.freeBytesAfter ?? 0)) (floor \(mb(floor))), "
            + "queue \(mb(report.queueBytesBefore)) → \(mb(report.queueBytesAfter)) (cap \(mb(cap))); "
            + "evicted \(report.evictedPending) pending records (\(perStream(report.evicted.mapValues(Int64.init)))), "
            + "deleted \(report.deletedUploaded) uploaded and \(report.deletedFailed) failed; "
            + "evicted so far: \(perStream(totals))"
        if !report.reserveHeldAfter { message += "; the \(mb(reserve.size)) reserve could not be made again yet" }
        if let error = report.error {
            message += "; could not finish: \(error)"
        }
        if report.error == nil && ((report.freeBytesAfter ?? 0) < floor || report.queueBytesAfter > cap) {
            // Nothing left that may go: only the user can make room now (the error's own
            // text already carries this hint).
            message += "; " + AgentErrorCode.storageFull.hint
        }
        logger.error("\(AgentErrorCode.storageFull.rawValue) \(message)")
        // Kept for `status` when something went or the pass failed; a pass that found
        // nothing to delete is only logged, so a disk that stays full does not fill the
        // events table one row per tick.
        if report.deletedAny || report.error != nil {
            try? queue.recordEvent(code: .storageFull, message: message)
        }
    }

    private func mb(_ bytes: Int64) -> String {
        String(format: "%.1f MB", Double(bytes) / 1_048_576)
    }
}
