import Foundation
import Logging
import Platform
import Synchronization

/// Puts true times on held records once the system clock can be believed, and lets them
/// go to the uploader. The daemon runs one pass on every health tick.
///
/// A record held in the running boot carries the boot clock (CLOCK_BOOTTIME) of its
/// capture. Once the wall clock is right, wall = boot + (wall_now - boot_now) for every
/// instant of this boot, suspends included, so its true capture time is exact to the
/// millisecond whatever the wall clock said then (1970, or a day behind).
///
/// Before the clock can be believed, a gpsd 3D fix received in this boot (TimeEvidence)
/// gives the same: wall = boot + (fix time - boot clock when it arrived), early by the
/// fraction of a second between the fix and its arrival. So does the clock of an earlier
/// moment of this boot when NTP kept it. Each pass keeps that evidence in the database
/// (TimeEvidenceStore), and a process that has none of its own takes what an earlier
/// process of the same boot kept: `sync` after the daemon stopped, or the next start.
///
/// A record held in an earlier boot is corrected the same way from the evidence that boot
/// kept, which stays in the database while the boot has held records. Without it, the
/// record cannot be corrected: that boot's clock is gone and nothing ties it to true time. Sending it with its provisional time could send a time
/// that is wrong by days without anyone noticing, so it stays held (never sent) and
/// `status` reports it. With `[daemon] trust_system_clock = true` the user vouches that
/// the clock was right: such records whose time passes the server's rule then go as they are.
public final class ClockCorrection: Sendable {
    private let database: AgentDatabase
    private let sync: any ClockSyncSource
    private let clock: any WallClock
    private let bootClock: @Sendable () -> BootInstant?
    private let evidence: TimeEvidence
    private let store: TimeEvidenceStore
    private let logger: Logger
    /// The last thing said about records that stay held, so it is logged on change only.
    private let lastNote = Mutex<String?>(nil)

    /// Records rewritten per transaction (an audio record is ~80 KB).
    static let batchSize = 20

    /// What one pass did.
    public struct Outcome: Sendable, Equatable {
        /// Held records of this boot whose times were corrected and released.
        public var corrected = 0
        /// Held records of earlier boots released with their time as it was (trust_system_clock).
        public var releasedAsIs = 0
        /// Records still held after the pass.
        public var stillHeld = HeldCounts()
        /// Smallest and largest correction applied, in seconds.
        public var shiftRange: ClosedRange<Double>?
        /// Why nothing was corrected (the clock cannot be believed yet), when so.
        public var waitingFor: String?
        /// What gave the true time: the system clock, or the evidence used instead.
        public var source: String?
    }

    public init(database: AgentDatabase, sync: any ClockSyncSource = ClockSync.live(), clock: any WallClock = SystemClock(),
                bootClock: @escaping @Sendable () -> BootInstant? = BootClock.now, evidence: TimeEvidence = .shared,
                logger: Logger) {
        self.database = database
        self.sync = sync
        self.clock = clock
        self.bootClock = bootClock
        self.evidence = evidence
        store = TimeEvidenceStore(database: database)
        self.logger = logger
    }

    /// What the evidence says the system clock is when NTP keeps it.
    static let synchronisedClockSource = "the system clock while NTP kept it"

    /// Takes this boot's stored evidence into `evidence` when this process has none yet
    /// (the daemon's start: captures check times against it before the first pass).
    public func loadEvidence() {
        guard let boot = bootClock() else { return }
        _ = keepEvidence(boot: boot, now: clock.now())
    }

    /// One pass. Never throws: a failing disk leaves the records held until the next tick.
    @discardableResult
    public func pass(trustSystemClock: Bool) -> Outcome {
        var outcome = Outcome()
        let boot = bootClock()
        let now = clock.now()
        let sample = boot.flatMap { keepEvidence(boot: $0, now: now) }
        do {
            let held = try database.recordQueue.heldCounts(currentBootID: boot?.bootID)
            guard held.total > 0 else { return outcome }
            let distrust = ClockTrust(sync: sync, trustSystemClock: trustSystemClock).distrust(now: now)
            if let why = distrust {
                if let boot, held.thisBoot > 0, let sample {
                    outcome.source = sample.source
                    try correct(bootID: boot.bootID, offset: sample.offset, now: boot.seconds + sample.offset, into: &outcome)
                } else {
                    outcome.waitingFor = why
                }
            } else if let boot, held.thisBoot > 0 {
                outcome.source = sync.unsynchronisedReason() == nil
                    ? "the synchronised system clock" : "the system clock, trusted by [daemon] trust_system_clock"
                try correct(bootID: boot.bootID, offset: now.timeIntervalSince1970 - boot.seconds,
                            now: now.timeIntervalSince1970, into: &outcome)
            }
            if held.earlierBoots > 0 {
                // The true time now, when known, bounds the earlier boots' times; their own
                // evidence makes them exact either way.
                let trueNow = distrust == nil ? now.timeIntervalSince1970 : sample.map { $0.boot.seconds + $0.offset }
                for earlier in try database.agentState.storedTimeEvidence(ofBootsOtherThan: boot?.bootID ?? ProvisionalTime.unknownBoot) {
                    let before = outcome.corrected
                    try correct(bootID: earlier.boot.bootID, offset: earlier.offset,
                                now: trueNow ?? Date.distantFuture.timeIntervalSince1970, into: &outcome)
                    if outcome.corrected > before { outcome.source = outcome.source ?? "\(earlier.source) of an earlier boot" }
                }
            }
            if distrust == nil, trustSystemClock, held.earlierBoots > 0 {
                try releaseEarlierBoots(than: boot?.bootID ?? ProvisionalTime.unknownBoot, now: now, into: &outcome)
            }
            outcome.stillHeld = try database.recordQueue.heldCounts(currentBootID: boot?.bootID)
        } catch {
            logger.error("cannot correct held records: \(error); they stay held and are tried again at the next maintenance round")
            return outcome
        }
        report(outcome, trustSystemClock: trustSystemClock)
        return outcome
    }

    /// This boot's evidence: what the clock says when NTP keeps it, else the latest this
    /// process learnt, else what an earlier process of this boot stored; kept in the
    /// database when new or moved. Without the database it is this process's alone.
    private func keepEvidence(boot: BootInstant, now: Date) -> TimeEvidence.Sample? {
        if sync.unsynchronisedReason() == nil, !CaptureTimeRule.clockLooksUnset(now) {
            evidence.record(trueTime: now, at: boot, source: Self.synchronisedClockSource)
        }
        do {
            if evidence.latest(bootID: boot.bootID) == nil, let stored = try store.load(bootID: boot.bootID) {
                evidence.adopt(stored)
                logger.info("true time of this boot from \(stored.source), kept in the database by an earlier process of this boot")
            }
            guard let sample = evidence.latest(bootID: boot.bootID) else { return nil }
            if try store.keep(sample) {
                logger.debug("kept this boot's true time (\(sample.source)) in the database")
            }
            return sample
        } catch {
            logger.error("cannot keep this boot's true time in the database: \(error); a later process of this boot may not be able to correct held records")
            return evidence.latest(bootID: boot.bootID)
        }
    }

    /// Wall time of boot-clock instant t is t + `offset`, for every t of boot `bootID`;
    /// `now` (true time, Unix seconds) bounds how far ahead a corrected time may be.
    private func correct(bootID: String, offset: Double, now nowSeconds: Double, into outcome: inout Outcome) throws {
        let now = Date(timeIntervalSince1970: nowSeconds)
        var after: Int64 = 0
        while true {
            let batch = try database.recordQueue.heldRecords(bootID: bootID, afterSeq: after, limit: Self.batchSize)
            guard let last = batch.last else { return }
            after = last.seq
            var released: [ReleasedRecord] = []
            for record in batch {
                let trueTime = Date(timeIntervalSince1970: record.provisional.bootTime + offset)
                let shiftMs = Int64(((trueTime.timeIntervalSince(record.capturedAt)) * 1000).rounded())
                guard CaptureTimeRule.isAcceptable(trueTime, now: now),
                      let payload = PayloadTimes.shifted(record.payload, by: shiftMs) else {
                    logger.error("held \(record.stream.rawValue) record \(record.seq) cannot be corrected (its time would be \(RFC3339.string(from: trueTime)), or its payload has no time in the agent's form); it stays held")
                    continue
                }
                released.append(ReleasedRecord(seq: record.seq,
                                               capturedAt: record.capturedAt.addingTimeInterval(Double(shiftMs) / 1000),
                                               payload: payload))
                let shift = Double(shiftMs) / 1000
                outcome.shiftRange = outcome.shiftRange.map { min($0.lowerBound, shift)...max($0.upperBound, shift) } ?? shift...shift
            }
            try database.recordQueue.release(released)
            outcome.corrected += released.count
        }
    }

    private func releaseEarlierBoots(than bootID: String, now: Date, into outcome: inout Outcome) throws {
        var after: Int64 = 0
        while true {
            let batch = try database.recordQueue.heldRecords(bootID: bootID, otherThan: true, afterSeq: after, limit: Self.batchSize)
            guard let last = batch.last else { return }
            after = last.seq
            let plausible = batch.filter { CaptureTimeRule.isAcceptable($0.capturedAt, now: now) }
            try database.recordQueue.release(plausible.map { ReleasedRecord(seq: $0.seq, capturedAt: $0.capturedAt, payload: $0.payload) })
            outcome.releasedAsIs += plausible.count
        }
    }

    private func report(_ outcome: Outcome, trustSystemClock: Bool) {
        if outcome.corrected > 0, let range = outcome.shiftRange {
            let shift = range.lowerBound == range.upperBound
                ? String(format: "%+.3f s", range.lowerBound)
                : String(format: "%+.3f s to %+.3f s", range.lowerBound, range.upperBound)
            logger.notice("corrected the times of \(outcome.corrected) held records from the boot clock by \(shift) (true time from \(outcome.source ?? "?")) and released them for upload")
        }
        if outcome.releasedAsIs > 0 {
            logger.notice("trust_system_clock is on: released \(outcome.releasedAsIs) records held in an earlier boot with the times they were captured with")
        }
        if outcome.stillHeld.thisBoot > 0, let why = outcome.waitingFor {
            note("records are held with provisional times (not sent) until the clock can be believed: \(why)")
        } else if outcome.stillHeld.earlierBoots > 0 {
            note("\(outcome.stillHeld.earlierBoots) records held from an earlier boot whose true time was never known (no NTP, no gpsd 3D fix kept): they are kept and not sent (docs/time.md)")
        } else if outcome.stillHeld.total == 0 {
            lastNote.withLock { $0 = nil }
        }
    }

    private func note(_ message: String) {
        let changed = lastNote.withLock { last -> Bool in
            defer { last = message }
            return last != message
        }
        if changed { logger.warning("\(message)") }
    }
}
