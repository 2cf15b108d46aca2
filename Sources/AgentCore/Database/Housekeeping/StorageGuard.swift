import Foundation
import Logging
import Platform
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
    public var reserveInPlaceAfter = false
    /// The most disk one of the pass's own writes took before it gave space back: the
    /// database's growth at the first checkpoint, or the WAL of a deletion or of a vacuum
    /// step. This is what the reserve must cover on a full disk.
    public var peakOwnWriteBytes: Int64 = 0
    /// Set when the pass could not finish (a write failed even with the reserve released).
    public var error: String?

    public var evictedPending: Int { evicted.values.reduce(0, +) }
    public var deletedAny: Bool { deletedUploaded + deletedFailed + evictedPending > 0 }
}

/// Keeps the queue inside its limits ([storage] min_free_mb and max_queue_mb) and keeps a
/// reserve file so that it can still delete when the disk is at 0 bytes free, whoever
/// filled it. The policy, row by row, is in docs/storage.md:
/// - the cap bounds the queue's own size: above it, records go in value order
///   (`EvictionTier`) until it fits again;
/// - the floor bounds the queue's growth: below it, uploaded and failed records may go to
///   give the floor back, but pending records never go to win back space that something
///   else took. The queue stops growing instead, and each new capture replaces the
///   oldest records of the lowest value, as many bytes as it brings (`makeRoom`).
/// One pass or one capture's room at a time; neither throws (a failure is reported and
/// the next pass tries again).
public final class StorageGuard: CaptureRoom {
    public let database: AgentDatabase
    public let reserve: StorageReserve
    private let limits: Mutex<StorageLimits>
    private let passLock = Mutex<Void>(())
    /// Set while the free disk is below the floor (read without the pass lock).
    private let breach = Mutex<FloorBreach?>(nil)
    /// Whether a breach an earlier process left in `agent_state` may still need clearing.
    private let storedBreachUnchecked = Atomic<Bool>(true)
    private let logger: Logger
    private let clock: any WallClock
    /// Smallest deletion, in payload bytes (a dozen audio chunks); a bigger shortfall is
    /// deleted in one go, up to 64 MiB, so that capture threads waiting on the queue's
    /// one writer are held up only briefly. With secure_delete FAST the WAL a deletion
    /// writes hardly depends on its size.
    private let sliceBytes: Int64

    public init(database: AgentDatabase, limits: StorageLimits, sliceBytes: Int64 = 1_048_576,
                clock: any WallClock = SystemClock(), logger: Logger = Logger(.storage)) {
        self.database = database
        self.reserve = StorageReserve(databasePath: database.path, size: limits.reserveBytes)
        self.limits = Mutex(limits)
        self.sliceBytes = max(1, sliceBytes)
        self.clock = clock
        self.logger = logger
        database.recordQueue.makeRoom(through: self)
    }

    /// A new configuration (SIGHUP): the floor and the cap apply from the next pass.
    public func update(_ new: StorageLimits) {
        limits.withLock { $0 = new }
    }

    public var currentLimits: StorageLimits { limits.withLock { $0 } }

    /// Whether the free disk is below the floor, so that the queue does not grow.
    public var isBelowFloor: Bool { breach.withLock { $0 != nil } }

    /// One pass: measures; deletes uploaded and failed records when the free disk is below
    /// the floor, and records in value order while the queue is above its cap; notes when
    /// the queue stops or starts growing; makes the reserve again when there is room.
    @discardableResult
    public func pass() -> StorageGuardReport {
        passLock.withLock { _ in runPass() }
    }

    // MARK: Room for a capture

    /// Before a capture is written: above the floor, nothing. Below it, the capture takes
    /// the place of the oldest records of the lowest value, as many payload bytes as it
    /// brings less what earlier deletions left unused, so the queue's records never weigh
    /// more than when the floor was crossed. After a refused write, the disk has no room
    /// for any growth: the capture's bytes go in any case, with the reserve handed back
    /// if SQLite needs it to delete.
    @discardableResult
    public func makeRoom(forCaptureBytes bytes: Int64, refused: Bool) -> Bool {
        let floor = currentLimits.effectiveFloor
        let free = freeBytes()
        let below = refused || free.map { $0 < wantedFree(floor) } ?? false
        // The common case, without the lock: room above the floor and no breach to end.
        if !below && !isBelowFloor { return false }
        return passLock.withLock { _ in
            guard below else {
                endBreach(free: free, floor: floor)
                return false
            }
            guard let stored = try? database.storedPayloadBytes() else { return false }
            var breach = beginBreach(stored: stored, free: free, floor: floor)
            if refused && reserve.isInPlace {
                // The capture already took the place of older records; what it lacks is
                // room for SQLite's own writes (the WAL reaching its working size), which
                // is what the reserve is for. The pass makes it again once there is room.
                reserve.release()
                logger.notice("storage guard: a capture was refused for space below the floor; the \(mb(reserve.size)) reserve is handed back for SQLite's own writes")
                return true
            }
            // A refused write: what earlier deletions left in the file was given back to
            // the disk or taken by another program; only what goes now makes room.
            if refused { breach.ceiling = min(breach.ceiling, stored) }
            let excess = stored + bytes - breach.ceiling
            var report = StorageGuardReport()
            var freed: Int64 = 0
            do {
                tiers: for tier in EvictionTier.allCases {
                    while freed < excess {
                        let slice = try evictWithReserve(tier, maxBytes: excess - freed, into: &report)
                        if slice.records == 0 { continue tiers }
                        freed += slice.payloadBytes
                    }
                    break
                }
            } catch {
                logger.error("\(AgentErrorCode.storageFull.rawValue) storage guard: cannot make room for a capture below the floor: \(error)")
            }
            for (stream, n) in report.evicted { breach.replaced[stream, default: 0] += n }
            self.breach.withLock { $0 = breach }
            if report.evictedPending > 0 {
                logger.debug("storage guard: below the floor, a capture of \(bytes) bytes replaced \(report.evictedPending) pending records")
            }
            return freed > 0
        }
    }

    /// Deletes one slice of `tier`, handing the reserve back once if SQLite has no room
    /// to write the deletion.
    private func evictWithReserve(_ tier: EvictionTier, maxBytes: Int64, into report: inout StorageGuardReport) throws -> EvictedSlice {
        let slice: EvictedSlice
        do {
            slice = try database.housekeeping.evictSlice(tier, maxBytes: max(1, maxBytes))
        } catch where QueueError.isStorageFull(error) && reserve.isInPlace {
            reserve.release()
            report.reserveReleased = true
            slice = try database.housekeeping.evictSlice(tier, maxBytes: max(1, maxBytes))
        }
        count(slice, tier: tier, into: &report)
        return slice
    }

    // MARK: The floor breach

    /// The queue's state while the free disk is below the floor.
    private struct FloorBreach {
        var since: Date
        /// The records' payload bytes may not grow past this (a ring).
        var ceiling: Int64
        /// Pending records new captures replaced, per stream.
        var replaced: [StreamName: Int] = [:]
    }

    /// The current breach, or a new one whose ceiling is what the queue holds now: said
    /// once, in the log and as the event `status` shows.
    private func beginBreach(stored: Int64, free: Int64?, floor: Int64) -> FloorBreach {
        if let current = breach.withLock({ $0 }) { return current }
        storedBreachUnchecked.store(false, ordering: .relaxed)
        let started = FloorBreach(since: clock.now(), ceiling: stored)
        breach.withLock { $0 = started }
        let pending = (try? database.recordQueue.counts())?.filter { $0.status == .pending }.reduce(0) { $0 + $1.records } ?? 0
        let cap = currentLimits.queueCap(filesystemBytes: DiskSpace.totalBytes(at: database.path))
        let message = "free disk \(mb(free ?? 0)) is below the floor \(mb(floor)) while the queue takes \(mb(database.fileBytes())) "
            + "(cap \(mb(cap))): the disk was filled by something else. The backlog is kept (\(pending) pending records); "
            + "the queue stops growing and new captures replace the oldest records as they arrive until the disk has room again. "
            + "Free disk space under \((database.path as NSString).deletingLastPathComponent)"
        logger.error("\(AgentErrorCode.storageFull.rawValue) storage guard: \(message)")
        try? database.agentState.recordEvent(code: .storageFull, message: "storage guard: " + message)
        try? database.agentState.set(AgentStateKey.storageBelowFloorSince, RFC3339.string(from: started.since))
        return started
    }

    /// Ends a breach: the queue may grow again. Said once, with what was replaced.
    private func endBreach(free: Int64?, floor: Int64) {
        guard let ended = breach.withLock({ current -> FloorBreach? in defer { current = nil }; return current }) else {
            // A daemon stopped below the floor left its breach behind.
            if storedBreachUnchecked.exchange(false, ordering: .relaxed), (try? database.agentState.value(AgentStateKey.storageBelowFloorSince)) != nil {
                try? database.agentState.set(AgentStateKey.storageBelowFloorSince, nil)
            }
            return
        }
        let replaced = ended.replaced.values.reduce(0, +)
        let message = "storage guard: free disk \(mb(free ?? 0)) is above the floor \(mb(floor)) again and the queue may grow again; "
            + "below the floor since \(RFC3339.string(from: ended.since)), new captures replaced \(replaced) pending records "
            + "(\(perStream(ended.replaced.mapValues(Int64.init))))"
        logger.notice("\(message)")
        try? database.agentState.set(AgentStateKey.storageBelowFloorSince, nil)
    }

    // MARK: The pass

    private func runPass() -> StorageGuardReport {
        let limits = currentLimits
        let floor = limits.effectiveFloor
        let cap = limits.queueCap(filesystemBytes: DiskSpace.totalBytes(at: database.path))
        let writeFailed = database.storagePressure.take()
        var report = StorageGuardReport()
        var free = freeBytes()
        report.freeBytesBefore = free
        report.queueBytesBefore = database.fileBytes()

        func wantedFree() -> Int64 { self.wantedFree(floor) }
        func belowFloor() -> Bool { free.map { $0 < wantedFree() } ?? false }
        // A WAL kept below the floor (see the checkpoint below) holds no records once
        // copied in: its blocks are room for the next writes, not queue to cap.
        var walKept = false
        func queueBytes() -> Int64 { database.fileBytes() - (walKept ? database.walBytes() : 0) }
        func overCap() -> Bool { queueBytes() > cap }

        if free.map({ $0 < floor }) ?? false { report.reasons.append("free disk below the floor") }
        if overCap() { report.reasons.append("queue above its cap") }
        if writeFailed { report.reasons.append("a write failed: disk full") }
        if report.reasons.isEmpty && !belowFloor() {
            endBreach(free: free, floor: floor)
            report.reserveInPlaceAfter = reserve.make()
            report.freeBytesAfter = freeBytes()
            report.queueBytesAfter = report.queueBytesBefore
            return report
        }
        if report.reasons.isEmpty {
            // Only the reserve is missing and there is no room to make it: what may go
            // goes for it now, while SQLite still has room to delete.
            report.reasons.append("no room for the \(mb(reserve.size)) reserve")
        }

        // Short of space for SQLite's own writes: hand the reserve back first.
        if reserve.isInPlace, writeFailed || (free ?? 0) < reserve.size {
            reserve.release()
            report.reserveReleased = true
            free = freeBytes()
        }
        do {
            // The WAL first: copying it in may grow the database by up to its size. Above
            // the floor it is emptied, and the deletions below write into space it gave
            // back; below it the file keeps its blocks, so the deletions that make room
            // for captures can still be written when another program takes every free byte.
            let keepWAL = belowFloor()
            report.peakOwnWriteBytes = try database.housekeeping.checkpointWAL(keepingFile: keepWAL)
            walKept = keepWAL
            free = freeBytes()
            let pageSize = Int64(try database.pageSize())
            tiers: for tier in EvictionTier.allCases {
                // Pending records go for the cap only: below the floor new captures
                // replace them one by one (makeRoom) instead.
                while tier.losesData ? overCap() : (belowFloor() || overCap()) {
                    // As much as is missing in one go (a cap lowered by 1 GB must not take
                    // a thousand rounds at start-up), at least a slice, at most 64 MiB.
                    let missing = max(tier.losesData ? 0 : free.map { wantedFree() - $0 } ?? 0, queueBytes() - cap)
                    let slice = try database.housekeeping.evictSlice(tier, maxBytes: min(max(sliceBytes, missing), 64 * StorageLimits.mebibyte))
                    if slice.records == 0 { continue tiers }
                    count(slice, tier: tier, into: &report)
                    report.peakOwnWriteBytes = max(report.peakOwnWriteBytes, database.walBytes())
                    // Vacuum steps (each one's WAL) sized to a quarter of the space there
                    // is, so that captures writing at the same time still find room; at
                    // least 1 MiB, at most 256 MiB.
                    let room = max(freeBytes() ?? 0, 0)
                    let walPeak = try database.housekeeping.compact(stepPages: Int(max(256, min(room / 4 / pageSize, 65_536))), keepingWAL: keepWAL)
                    report.peakOwnWriteBytes = max(report.peakOwnWriteBytes, walPeak)
                    free = freeBytes()
                }
            }
        } catch {
            report.error = "\(error)"
        }
        let stillBelow = freeBytes().map { $0 < wantedFree() } ?? false
        if stillBelow || writeFailed, let stored = try? database.storedPayloadBytes() {
            var breach = beginBreach(stored: stored, free: report.freeBytesBefore, floor: floor)
            if report.deletedAny {
                // What this pass deleted went back to the disk: the ring is that much smaller.
                breach.ceiling = min(breach.ceiling, stored)
                self.breach.withLock { $0 = breach }
            }
        } else {
            endBreach(free: freeBytes(), floor: floor)
        }
        // Below the floor the reserve is made again as soon as its own size is free: the
        // queue no longer grows, so that space is the guard's, not the captures'.
        let reserveRoom = reserve.size + (stillBelow ? 0 : floor)
        report.reserveInPlaceAfter = (freeBytes().map { $0 >= reserveRoom } ?? false) ? reserve.make() : reserve.isInPlace
        report.freeBytesAfter = freeBytes()
        report.queueBytesAfter = queueBytes()
        if report.deletedAny || report.error != nil || report.queueBytesAfter > cap {
            announce(report, floor: floor, cap: cap)
        } else {
            // Emptying the WAL was enough, or the floor is broken and the breach says so.
            logger.debug("storage guard: \(report.reasons.joined(separator: "; ")): nothing deleted")
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

    private func freeBytes() -> Int64? { DiskSpace.availableBytes(at: database.path) }

    /// The free disk the floor asks for: the reserve counts as missing space until it is
    /// made, so the space a released reserve gives back is never room for the queue to grow.
    private func wantedFree(_ floor: Int64) -> Int64 { floor + (reserve.isInPlace ? 0 : reserve.size) }

    /// The E004 line in the log and the event `status` shows: why, what went per stream,
    /// the totals so far, and what to do when it could not help.
    private func announce(_ report: StorageGuardReport, floor: Int64, cap: Int64) {
        let totals = (try? database.housekeeping.evictedTotals()) ?? [:]
        var message = "storage guard (\(report.reasons.joined(separator: "; "))): "
            + "free \(mb(report.freeBytesBefore ?? 0)) → \(mb(report.freeBytesAfter ?? 0)) (floor \(mb(floor))), "
            + "queue \(mb(report.queueBytesBefore)) → \(mb(report.queueBytesAfter)) (cap \(mb(cap))); "
            + "evicted \(report.evictedPending) pending records (\(perStream(report.evicted.mapValues(Int64.init)))), "
            + "deleted \(report.deletedUploaded) uploaded and \(report.deletedFailed) failed; "
            + "evicted so far: \(perStream(totals))"
        if !report.reserveInPlaceAfter { message += "; the \(mb(reserve.size)) reserve could not be made again yet" }
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
            try? database.agentState.recordEvent(code: .storageFull, message: message)
        }
    }

    private func perStream(_ counts: [StreamName: Int64]) -> String {
        StreamName.allCases.map { "\($0.rawValue) \(counts[$0] ?? 0)" }.joined(separator: ", ")
    }

    private func mb(_ bytes: Int64) -> String {
        String(format: "%.1f MB", Double(bytes) / 1_048_576)
    }
}
