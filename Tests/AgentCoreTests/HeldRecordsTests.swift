import AgentCore
import Foundation
import Logging
import Platform
import Synchronization
import TestRigs
import XCTest

/// Records captured while the clock cannot be believed, on a real SQLite queue: held out
/// of every upload batch, corrected by the boot clock exactly, and the earlier-boot rule.
final class HeldRecordsTests: XCTestCase {
    var dir: TemporaryDirectory!
    var clock: ManualClock!
    var database: AgentDatabase!
    var syncFile: String!
    let logger = Logger(label: "ariata.time.test")
    /// The wall clock once it is right, and the boot clock at that moment.
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let bootNow = BootInstant(bootID: "boot-now", seconds: 5_000)

    override func setUpWithError() throws {
        dir = try TemporaryDirectory("held")
        clock = ManualClock(t0)
        database = try AgentDatabase(path: dir.file("agent.sqlite"), clock: clock)
        syncFile = dir.file("clock-sync")
        try setSynchronised(false)
    }

    func setSynchronised(_ synchronised: Bool) throws {
        try (synchronised ? "synchronised" : "unsynchronised").write(toFile: syncFile, atomically: true, encoding: .utf8)
    }

    /// A process's correction: what it learns of the true time is its own (a synchronised
    /// clock is evidence too), so tests do not share it through `TimeEvidence.shared`.
    func correction() -> ClockCorrection {
        let boot = bootNow
        return ClockCorrection(database: database, sync: FileClockSync(path: syncFile), clock: clock, bootClock: { boot },
                               evidence: TimeEvidence(), logger: logger)
    }

    /// A health sample dated `capturedAt` by the clock, held at `bootTime` of boot `bootID`.
    func heldHealth(at capturedAt: Date, bootID: String = "boot-now", bootTime: Double) throws -> NewRecord {
        var record = try NewRecord(stream: .health, capturedAt: capturedAt, fields: [
            "timestamp": RFC3339.string(from: capturedAt), "metric_type": "heart_rate", "value": 72, "unit": "bpm",
            "metadata": ["source": "watch \"timestamp\":\"1970\""],
        ])
        record.provisional = ProvisionalTime(bootID: bootID, bootTime: bootTime)
        return record
    }

    func heldAudio(at start: Date, duration: Double, bootTime: Double) throws -> NewRecord {
        var record = try NewRecord(stream: .microphone, capturedAt: start, fields: [
            "timestamp_start": RFC3339.string(from: start),
            "timestamp_end": RFC3339.string(from: start.addingTimeInterval(duration)),
            "duration": duration, "overlap_duration": 0, "audio_data": String(repeating: "QUJD", count: 5_000),
        ])
        record.provisional = ProvisionalTime(bootID: "boot-now", bootTime: bootTime)
        return record
    }

    func location(at time: Date) throws -> NewRecord {
        try NewRecord(stream: .location, capturedAt: time, fields: ["timestamp": RFC3339.string(from: time), "latitude": 1, "longitude": 2])
    }

    func payloadObject(_ data: Data) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    func testHeldRecordsAreInNoBatchAndNotCountedAsWaitingForUpload() throws {
        let provisional = Date(timeIntervalSince1970: 1_000)
        try database.recordQueue.enqueue(heldHealth(at: provisional, bootTime: 10))
        let sent = try NewRecord(stream: .health, capturedAt: t0, fields: ["timestamp": RFC3339.string(from: t0)])
        try database.recordQueue.enqueue(sent)
        try database.recordQueue.enqueue(heldHealth(at: provisional.addingTimeInterval(1), bootTime: 11))
        try database.recordQueue.enqueue(heldAudio(at: provisional, duration: 30, bootTime: 10))
        try database.recordQueue.enqueue(location(at: t0))

        XCTAssertEqual(try database.recordQueue.pendingBatch(stream: .health, maxCount: 100, maxBytes: 10_000_000).map(\.id), [sent.id])
        XCTAssertEqual(try database.recordQueue.pendingBatch(stream: .microphone, maxCount: 100, maxBytes: 10_000_000), [])
        XCTAssertEqual(try database.recordQueue.newestPending(stream: .health)?.id, sent.id)
        XCTAssertNil(try database.recordQueue.newestPending(stream: .microphone))
        XCTAssertEqual(try database.recordQueue.streamsWithPending(), [.health, .location], "a stream with only held records has nothing to send")
        XCTAssertEqual(try database.recordQueue.oldestPendingCapture(stream: .health), t0, "a provisional 1970 time is not the oldest pending")
        // Held records stay pending in the counts (they are not lost) and are counted apart.
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .pending), 3)
        let held = try database.recordQueue.heldCounts(currentBootID: "boot-now")
        XCTAssertEqual(held.thisBoot, 3)
        XCTAssertEqual(held.earlierBoots, 0)
        XCTAssertEqual(held.byStream, [.health: 2, .microphone: 1])
        let heldHealthTotals = try database.recordQueue.heldTotals(stream: .health)
        XCTAssertEqual(heldHealthTotals.records, 2)
        XCTAssertEqual(heldHealthTotals.bytes, Int64(try database.recordQueue.records(stream: .health).filter { $0.id != sent.id }
            .reduce(0) { $0 + $1.payload.count }))
    }

    func testNothingIsCorrectedWhileTheClockCannotBeBelieved() throws {
        try database.recordQueue.enqueue(heldHealth(at: Date(timeIntervalSince1970: 1_000), bootTime: 10))
        let outcome = correction().pass(trustSystemClock: false)
        XCTAssertEqual(outcome.corrected, 0)
        XCTAssertNotNil(outcome.waitingFor)
        XCTAssertEqual(try database.recordQueue.pendingBatch(stream: .health, maxCount: 10, maxBytes: 1_000_000), [])

        // trust_system_clock does not make a 1970 clock right either.
        clock.set(Date(timeIntervalSince1970: 2_000))
        XCTAssertEqual(correction().pass(trustSystemClock: true).corrected, 0)
    }

    func testCorrectionShiftsThePayloadTimesByTheBootClockOffsetExactly() throws {
        // Captured with the clock at 1970-01-01T00:16:40.123Z, at 4,000.5 s of boot time;
        // the boot clock reads 5,000 s when the wall clock is t0, so the true time is
        // t0 - 999.5 s.
        let provisional = Date(timeIntervalSince1970: 1_000.123)
        let health = try heldHealth(at: provisional, bootTime: 4_000.5)
        let audio = try heldAudio(at: provisional.addingTimeInterval(-30), duration: 29.937_5, bootTime: 3_970.5)
        try database.recordQueue.enqueue(health)
        try database.recordQueue.enqueue(audio)
        try setSynchronised(true)

        let outcome = correction().pass(trustSystemClock: false)
        XCTAssertEqual(outcome.corrected, 2)
        XCTAssertEqual(outcome.stillHeld.total, 0)

        let trueMs = Int64(1_800_000_000_000) - 999_500
        let shiftMs = trueMs - 1_000_123
        XCTAssertEqual(outcome.shiftRange, Double(shiftMs) / 1000 ... Double(shiftMs) / 1000)
        let sentHealth = try XCTUnwrap(try database.recordQueue.pendingBatch(stream: .health, maxCount: 10, maxBytes: 1_000_000).first)
        XCTAssertEqual(try payloadObject(sentHealth.payload)["timestamp"] as? String, RFC3339.string(milliseconds: trueMs))
        XCTAssertEqual(sentHealth.capturedAt.timeIntervalSince1970, Double(trueMs) / 1000, accuracy: 0.000_5)
        // Only the time changed: every other byte (including a source name that quotes a
        // timestamp) is as captured.
        let expected = String(decoding: health.payload, as: UTF8.self)
            .replacingOccurrences(of: "\"timestamp\":\"\(RFC3339.string(from: provisional))\"",
                                  with: "\"timestamp\":\"\(RFC3339.string(milliseconds: trueMs))\"")
        XCTAssertEqual(String(decoding: sentHealth.payload, as: UTF8.self), expected)

        let sentAudio = try XCTUnwrap(try database.recordQueue.pendingBatch(stream: .microphone, maxCount: 10, maxBytes: 10_000_000).first)
        let audioFields = try payloadObject(sentAudio.payload)
        let startMs = try XCTUnwrap(RFC3339.milliseconds(from: RFC3339.string(from: provisional.addingTimeInterval(-30))))
        let endMs = try XCTUnwrap(RFC3339.milliseconds(from: RFC3339.string(from: provisional.addingTimeInterval(-0.062_5))))
        XCTAssertEqual(audioFields["timestamp_start"] as? String, RFC3339.string(milliseconds: startMs + shiftMs))
        XCTAssertEqual(audioFields["timestamp_end"] as? String, RFC3339.string(milliseconds: endMs + shiftMs))
        XCTAssertEqual(audioFields["audio_data"] as? String, String(repeating: "QUJD", count: 5_000))
        XCTAssertEqual(sentAudio.payload.count, audio.payload.count)

        // Released once: a second pass finds nothing.
        XCTAssertEqual(correction().pass(trustSystemClock: false).corrected, 0)
    }

    /// No NTP, a 1970 clock, but a gpsd 3D fix: its time, tied to the boot clock when it
    /// arrived, corrects the held records exactly as a synchronised clock would.
    func testAGPSFixCorrectsHeldRecordsWhileTheClockIsStillWrong() throws {
        clock.set(Date(timeIntervalSince1970: 2_000))
        let health = try heldHealth(at: Date(timeIntervalSince1970: 1_000.123), bootTime: 4_000.5)
        try database.recordQueue.enqueue(health)
        let evidence = TimeEvidence()
        evidence.record(trueTime: t0, at: BootInstant(bootID: "another-boot", seconds: 5_000), source: "gpsd 3D fix")
        let boot = bootNow
        let correction = ClockCorrection(database: database, sync: FileClockSync(path: syncFile), clock: clock,
                                         bootClock: { boot }, evidence: evidence, logger: logger)
        XCTAssertEqual(correction.pass(trustSystemClock: false).corrected, 0, "a fix from another boot says nothing")

        evidence.record(trueTime: t0, at: BootInstant(bootID: "boot-now", seconds: 5_000), source: "gpsd 3D fix")
        let outcome = correction.pass(trustSystemClock: false)
        XCTAssertEqual(outcome.corrected, 1)
        XCTAssertEqual(outcome.source, "gpsd 3D fix")
        let sent = try XCTUnwrap(try database.recordQueue.pendingBatch(stream: .health, maxCount: 10, maxBytes: 1_000_000).first)
        XCTAssertEqual(try payloadObject(sent.payload)["timestamp"] as? String,
                       RFC3339.string(milliseconds: Int64(1_800_000_000_000) - 999_500))
    }

    /// The daemon learnt the true time from a gpsd 3D fix and exited; `sync`, a new process
    /// of the same boot that knows nothing in memory, corrects the records held at the
    /// daemon's stop from what it kept in the database. After a reboot, nothing is
    /// corrected with it.
    func testEvidenceKeptByOneProcessCorrectsHeldRecordsOfTheSameBootInTheNext() throws {
        clock.set(Date(timeIntervalSince1970: 2_000))
        let path = dir.file("agent.sqlite")
        let boot = bootNow
        let fix = TimeEvidence.Sample(trueTime: t0, boot: bootNow, source: "gpsd 3D fix")
        do {
            let daemonEvidence = TimeEvidence()
            daemonEvidence.record(trueTime: fix.trueTime, at: fix.boot, source: fix.source)
            ClockCorrection(database: database, sync: FileClockSync(path: syncFile), clock: clock, bootClock: { boot },
                            evidence: daemonEvidence, logger: logger).pass(trustSystemClock: false)
        }
        // Written after the daemon's last pass, and one of an earlier boot.
        let last = try heldHealth(at: Date(timeIntervalSince1970: 1_000.123), bootTime: 4_000.5)
        let earlier = try heldHealth(at: t0.addingTimeInterval(-86_400), bootID: "boot-before", bootTime: 4_000.5)
        try database.recordQueue.enqueue([last, earlier], anchor: nil)
        database = nil

        let reopened = try AgentDatabase(path: path, clock: clock)
        XCTAssertEqual(try reopened.agentState.storedTimeEvidence(bootID: "boot-now"), fix)
        let syncEvidence = TimeEvidence()
        let outcome = ClockCorrection(database: reopened, sync: FileClockSync(path: syncFile), clock: clock, bootClock: { boot },
                                      evidence: syncEvidence, logger: logger).pass(trustSystemClock: false)
        XCTAssertEqual(outcome.corrected, 1)
        XCTAssertEqual(outcome.source, "gpsd 3D fix")
        XCTAssertEqual(outcome.stillHeld.thisBoot, 0)
        XCTAssertEqual(outcome.stillHeld.earlierBoots, 1, "another boot's record is never corrected with this boot's fix")
        let sent = try reopened.recordQueue.pendingBatch(stream: .health, maxCount: 10, maxBytes: 1_000_000)
        XCTAssertEqual(sent.map(\.id), [last.id])
        XCTAssertEqual(try payloadObject(try XCTUnwrap(sent.first).payload)["timestamp"] as? String,
                       RFC3339.string(milliseconds: Int64(1_800_000_000_000) - 999_500))
        XCTAssertEqual(syncEvidence.latest(bootID: "boot-now"), fix, "taken in, for captures to check times against")

        // The next boot, with no true time of its own yet: a record this boot held is an
        // earlier boot's now, and is corrected from the fix this boot kept; the record of
        // the boot before, which kept none, stays held.
        var straggler = try heldHealth(at: Date(timeIntervalSince1970: 1_500), bootTime: 4_500)
        straggler.id = UUID()
        try reopened.recordQueue.enqueue(straggler)
        let nextBoot = BootInstant(bootID: "boot-after", seconds: 6_000)
        let afterReboot = ClockCorrection(database: reopened, sync: FileClockSync(path: syncFile), clock: clock,
                                          bootClock: { nextBoot }, evidence: TimeEvidence(), logger: logger)
            .pass(trustSystemClock: false)
        XCTAssertEqual(afterReboot.corrected, 1)
        XCTAssertEqual(afterReboot.source, "gpsd 3D fix of an earlier boot")
        XCTAssertEqual(afterReboot.stillHeld.earlierBoots, 1, "the boot that kept no true time")
        let afterRebootSent = try reopened.recordQueue.pendingBatch(stream: .health, maxCount: 10, maxBytes: 1_000_000)
        XCTAssertEqual(afterRebootSent.map(\.id), [last.id, straggler.id])
        XCTAssertEqual(try payloadObject(try XCTUnwrap(afterRebootSent.last).payload)["timestamp"] as? String,
                       RFC3339.string(milliseconds: Int64(1_800_000_000_000) - 500_000),
                       "boot time 4,500 s of a boot whose 5,000 s was the fix's time: exact")
    }

    /// A boot's evidence stays in the database while that boot still holds records, and
    /// goes with its last one; a record of a boot that never knew its true time stays held.
    func testAnEarlierBootsEvidenceStaysWhileItHoldsRecords() throws {
        let fix = TimeEvidence.Sample(trueTime: t0, boot: BootInstant(bootID: "boot-before", seconds: 5_000), source: "gpsd 3D fix")
        try database.agentState.storeTimeEvidence(fix)
        let held = try heldHealth(at: Date(timeIntervalSince1970: 1_000), bootID: "boot-before", bootTime: 4_990)
        try database.recordQueue.enqueue(held)
        let nextFix = TimeEvidence.Sample(trueTime: t0.addingTimeInterval(3_600), boot: bootNow, source: "gpsd 3D fix")
        try database.agentState.storeTimeEvidence(nextFix)
        XCTAssertEqual(try database.agentState.storedTimeEvidence(bootID: "boot-before"), fix, "kept: it still holds a record")
        XCTAssertEqual(try database.agentState.storedTimeEvidence(ofBootsOtherThan: "boot-now"), [fix])

        let boot = bootNow
        let evidence = TimeEvidence()
        evidence.record(trueTime: nextFix.trueTime, at: nextFix.boot, source: nextFix.source)
        let outcome = ClockCorrection(database: database, sync: FileClockSync(path: syncFile), clock: clock, bootClock: { boot },
                                      evidence: evidence, logger: logger).pass(trustSystemClock: false)
        XCTAssertEqual(outcome.corrected, 1)
        XCTAssertEqual(outcome.stillHeld.total, 0)
        let sent = try XCTUnwrap(database.recordQueue.pendingBatch(stream: .health, maxCount: 10, maxBytes: 1_000_000).first)
        XCTAssertEqual(try payloadObject(sent.payload)["timestamp"] as? String,
                       RFC3339.string(milliseconds: Int64(t0.timeIntervalSince1970 * 1_000) - 10_000))
        try database.agentState.storeTimeEvidence(nextFix)
        XCTAssertNil(try database.agentState.storedTimeEvidence(bootID: "boot-before"), "gone with the boot's last held record")
    }

    /// A fix comes every second: the evidence is written when it is new (a boot's first,
    /// another source) and then only when it has moved, at most every five minutes.
    func testEvidenceIsWrittenWhenNewOrMovedNotOnEveryFix() throws {
        func sample(_ bootSeconds: Double, offsetMs: Double = 0, source: String = "gpsd 3D fix", bootID: String = "boot-now") -> TimeEvidence.Sample {
            TimeEvidence.Sample(trueTime: t0.addingTimeInterval(bootSeconds - 5_000 + offsetMs / 1_000),
                                boot: BootInstant(bootID: bootID, seconds: bootSeconds), source: source)
        }
        let store = TimeEvidenceStore(database: database)
        XCTAssertTrue(try store.keep(sample(5_000)), "the boot's first")
        XCTAssertFalse(try store.keep(sample(5_001, offsetMs: 40)), "the next fix")
        XCTAssertFalse(try store.keep(sample(5_299, offsetMs: 500)), "moved, but within five minutes")
        XCTAssertFalse(try store.keep(sample(5_400, offsetMs: 20)), "five minutes on, but not moved")
        XCTAssertFalse(try TimeEvidenceStore(database: database).keep(sample(5_002)), "a new process compares with what is stored")
        XCTAssertEqual(try database.agentState.storedTimeEvidence(bootID: "boot-now"), sample(5_000))
        XCTAssertTrue(try store.keep(sample(5_400, offsetMs: 150)), "five minutes on and moved")
        XCTAssertTrue(try store.keep(sample(5_401, offsetMs: 150, source: "the system clock while NTP kept it")), "another source")
        XCTAssertEqual(try database.agentState.storedTimeEvidence(bootID: "boot-now")?.source, "the system clock while NTP kept it")
        XCTAssertTrue(try store.keep(sample(10, bootID: "boot-after")), "a new boot")
        XCTAssertNil(try database.agentState.storedTimeEvidence(bootID: "boot-now"), "an earlier boot's evidence is of no more use")
    }

    /// A synchronised clock is evidence too, kept once; the passes of the maintenance rounds
    /// after it (every 30 s, ten minutes of them) write nothing while it stays where it was.
    func testQuietPassesKeepTheEvidenceOnceAndWriteNothingMore() throws {
        try setSynchronised(true)
        let bootSeconds = Mutex<Double>(5_000)
        let correction = ClockCorrection(database: database, sync: FileClockSync(path: syncFile), clock: clock,
                                         bootClock: { BootInstant(bootID: "boot-now", seconds: bootSeconds.withLock { $0 }) },
                                         evidence: TimeEvidence(), logger: logger)
        correction.pass(trustSystemClock: false)
        XCTAssertEqual(try database.agentState.storedTimeEvidence(bootID: "boot-now"),
                       TimeEvidence.Sample(trueTime: t0, boot: bootNow, source: "the system clock while NTP kept it"))
        func walBytes() -> Int64 { DatabaseFiles.walBytes(dir.file("agent.sqlite")) }
        let first = walBytes()
        for _ in 0..<20 {
            bootSeconds.withLock { $0 += 30 }
            clock.advance(by: 30)
            correction.pass(trustSystemClock: false)
        }
        XCTAssertEqual(walBytes(), first, "twenty quiet passes wrote nothing")
    }

    /// A queue of schema 4 (before time evidence) is migrated forward, and `status`'s
    /// read-only open of one that is not finds no evidence rather than failing.
    func testASchemaFourQueueIsReadWithoutEvidenceAndMigratedToKeepIt() throws {
        let path = dir.file("four.sqlite")
        let old = try location(at: t0)
        do {
            let writer = try AgentDatabase(path: path, clock: clock)
            try writer.recordQueue.enqueue(old)
        }
        try OlderQueue.downgrade(path, to: 4, logDirectory: dir.path)

        let readOnly = try AgentDatabase(readOnlyPath: path, clock: clock)
        XCTAssertNil(try readOnly.agentState.storedTimeEvidence(bootID: "boot-now"))
        XCTAssertEqual(try readOnly.recordQueue.heldCounts(currentBootID: "boot-now").total, 0)

        let migrated = try AgentDatabase(path: path, clock: clock)
        XCTAssertEqual(try migrated.recordQueue.pendingBatch(stream: .location, maxCount: 10, maxBytes: 1_000_000).map(\.id), [old.id])
        let fix = TimeEvidence.Sample(trueTime: t0, boot: bootNow, source: "gpsd 3D fix")
        try migrated.agentState.storeTimeEvidence(fix)
        XCTAssertEqual(try AgentDatabase(readOnlyPath: path, clock: clock).agentState.storedTimeEvidence(bootID: "boot-now"), fix)
    }

    func testRecordsHeldInAnEarlierBootStayHeldUnlessTheUserTrustsTheClock() throws {
        // A clock restored days behind by fake-hwclock in a boot that never got NTP, and a
        // 1970 clock in another.
        let plausible = t0.addingTimeInterval(-3 * 86_400)
        let old = try heldHealth(at: plausible, bootID: "boot-before", bootTime: 100)
        let unset = try heldHealth(at: Date(timeIntervalSince1970: 1_000), bootID: "boot-long-ago", bootTime: 50)
        let current = try heldHealth(at: Date(timeIntervalSince1970: 1_000), bootTime: 4_000)
        try database.recordQueue.enqueue([old, unset, current], anchor: nil)
        try setSynchronised(true)

        let outcome = correction().pass(trustSystemClock: false)
        XCTAssertEqual(outcome.corrected, 1, "only this boot's record can be corrected")
        XCTAssertEqual(outcome.releasedAsIs, 0)
        XCTAssertEqual(outcome.stillHeld.earlierBoots, 2)
        XCTAssertEqual(try database.recordQueue.pendingBatch(stream: .health, maxCount: 10, maxBytes: 1_000_000).map(\.id), [current.id])

        // The user says the clock is right: what passes the server's rule goes as it was
        // captured; a 1970 time never does.
        let trusted = correction().pass(trustSystemClock: true)
        XCTAssertEqual(trusted.releasedAsIs, 1)
        XCTAssertEqual(trusted.stillHeld.earlierBoots, 1)
        let batch = try database.recordQueue.pendingBatch(stream: .health, maxCount: 10, maxBytes: 1_000_000)
        XCTAssertEqual(batch.map(\.id), [old.id, current.id])
        XCTAssertEqual(batch.first?.payload, old.payload)
    }

    func testDeletingAHeldRecordForgetsItsProvisionalTime() throws {
        try database.recordQueue.enqueue(heldAudio(at: Date(timeIntervalSince1970: 1_000), duration: 30, bootTime: 10))
        XCTAssertEqual(try database.recordQueue.heldCounts(currentBootID: "boot-now").total, 1)
        let slice = try database.housekeeping.evictSlice(.pendingAudio, maxBytes: 1)
        XCTAssertEqual(slice.records, 1)
        XCTAssertEqual(try database.recordQueue.heldCounts(currentBootID: "boot-now").total, 0)
    }

    /// A queue written by the agent before held records existed (schema 1) is migrated and
    /// keeps its records, which nothing holds.
    func testASchemaOneQueueIsMigratedAndKeepsItsRecords() throws {
        let path = dir.file("old.sqlite")
        let old = try location(at: t0)
        do {
            let writer = try AgentDatabase(path: path, clock: clock)
            try writer.recordQueue.enqueue(old)
        }
        try OlderQueue.downgrade(path, to: 1, logDirectory: dir.path)

        let migrated = try AgentDatabase(path: path, clock: clock)
        XCTAssertEqual(try migrated.recordQueue.pendingBatch(stream: .location, maxCount: 10, maxBytes: 1_000_000).map(\.id), [old.id])
        XCTAssertEqual(try migrated.recordQueue.heldCounts(currentBootID: "boot-now").total, 0)
        var held = try heldHealth(at: Date(timeIntervalSince1970: 1_000), bootTime: 1)
        held.id = UUID()
        try migrated.recordQueue.enqueue(held)
        XCTAssertEqual(try migrated.recordQueue.heldCounts(currentBootID: "boot-now").thisBoot, 1)
    }

    func testPayloadTimesRefuseWhatTheAgentDidNotWrite() throws {
        XCTAssertNil(PayloadTimes.shifted(Data("{\"latitude\":1}".utf8), by: 1_000), "no time to correct")
        XCTAssertNil(PayloadTimes.shifted(Data("{\"timestamp\":\"2026-11-22T10:05:00Z\"}".utf8), by: 1_000), "not the agent's form")
        XCTAssertNil(PayloadTimes.shifted(Data("not json".utf8), by: 1_000))
        XCTAssertEqual(PayloadTimes.shifted(Data("{\"timestamp\":\"1999-12-31T23:59:59.999Z\"}".utf8), by: 1),
                       Data("{\"timestamp\":\"2000-01-01T00:00:00.000Z\"}".utf8))
    }

    func testTrustSystemClockIsReadAndCheckedLikeEveryKey() throws {
        XCTAssertFalse(try AgentConfig(toml: "", file: "a.toml").daemon.trustSystemClock)
        XCTAssertTrue(try AgentConfig(toml: "[daemon]\ntrust_system_clock = true\n", file: "a.toml").daemon.trustSystemClock)
        XCTAssertThrowsError(try AgentConfig(toml: "[daemon]\ntrust_system_clock = \"yes\"\n", file: "a.toml")) { error in
            XCTAssertEqual((error as? ConfigError)?.key, "daemon.trust_system_clock")
            XCTAssertTrue("\(error)".contains("expected true or false"), "\(error)")
        }
    }
}
