import AgentCore
import Foundation
import TestRigs
import XCTest

/// The storage guard on real SQLite files on real small file systems (tmpfs, ext4 on a
/// loop device): a disk filled to 0 bytes by the agent's own backlog or by another
/// program, eviction in value order, the queue cap, and the counts `status` shows.
final class StorageGuardTests: XCTestCase, StorageBacklogWriting {
    /// Small writes until three in a row are refused: the disk is at 0 bytes for SQLite.
    func fillTheLastBytes(_ database: AgentDatabase, into written: inout [StreamName: Int]) {
        var refused = 0
        while refused < 3 {
            do {
                try database.recordQueue.enqueue(record(.location))
                written[.location, default: 0] += 1
                refused = 0
            } catch {
                refused += 1
            }
        }
    }

    // MARK: A full disk: the backlog is kept, new captures replace the oldest

    /// Each of `rounds` rounds writes an audio chunk, a location fix and a health sample,
    /// as capture does while the disk stays full; every write must succeed.
    func captureWhileFull(_ database: AgentDatabase, rounds: Int) throws {
        for round in 0..<rounds {
            for stream in [StreamName.microphone, .location, .health] {
                do {
                    try database.recordQueue.enqueue(record(stream))
                } catch {
                    XCTFail("round \(round): a \(stream) capture was refused on the full disk: \(error)")
                    throw error
                }
            }
        }
    }

    func microphoneIDs(_ database: AgentDatabase) throws -> [UUID] {
        try database.recordQueue.records(stream: .microphone).map(\.id)
    }

    /// The chunks of `oldest` that are gone after `rounds` rounds of capture: its oldest,
    /// in order, a chunk for each new chunk and at most two more for the fixes and samples.
    func assertOldestReplaced(_ oldest: [UUID], in database: AgentDatabase, rounds: Int,
                              file: StaticString = #filePath, line: UInt = #line) throws -> [UUID] {
        let left = Set(try microphoneIDs(database))
        let gone = oldest.filter { !left.contains($0) }
        XCTAssertEqual(Array(oldest.prefix(gone.count)), gone, "the oldest chunks went, in order", file: file, line: line)
        XCTAssertGreaterThanOrEqual(gone.count, rounds, file: file, line: line)
        XCTAssertLessThanOrEqual(gone.count, rounds + 2, "only as much as the new captures needed", file: file, line: line)
        return gone
    }

    func testTheAgentsOwnBacklogFillingTheDiskKeepsItAndNewCapturesReplaceTheOldest() throws {
        let fs = try mount()
        let database = try AgentDatabase(path: fs.file("agent.sqlite"))
        let storageGuard = StorageGuard(database: database, limits: StorageLimits(minFreeBytes: floor, maxQueueBytes: noCap))
        storageGuard.pass()
        XCTAssertTrue(storageGuard.reserve.isInPlace, "the first pass makes the reserve while there is room")

        // The server is down: nothing is uploaded, the backlog grows until the disk is
        // below the floor; from then on it is a ring of that size.
        var written = try writeBacklog(database, audio: 1_000)
        XCTAssertLessThan(fs.freeBytes, floor + storageGuard.reserve.size, "the backlog reached the floor")
        XCTAssertTrue(storageGuard.isBelowFloor)
        let stored = try database.storedPayloadBytes()
        let before = try pending(database)
        XCTAssertEqual(before[.location], written[.location], "no location went while there was audio")
        XCTAssertEqual(before[.health], written[.health])
        XCTAssertEqual(try database.housekeeping.evictedTotals()[.microphone], Int64((written[.microphone] ?? 0) - (before[.microphone] ?? 0)),
                       "every chunk that went is counted")

        let report = storageGuard.pass()
        XCTAssertNil(report.error)
        XCTAssertTrue(report.reasons.contains("free disk below the floor"), "\(report.reasons)")
        XCTAssertEqual(report.evictedPending, 0, "the pass deletes no pending record for the floor")
        XCTAssertEqual(try pending(database), before)

        // Capture goes on: each new chunk takes the place of the oldest one.
        let oldest = try microphoneIDs(database)
        try captureWhileFull(database, rounds: 20)
        written[.location, default: 0] += 20
        let after = try pending(database)
        XCTAssertEqual(after[.location], written[.location], "location survives while there is audio")
        XCTAssertEqual(after[.health], (written[.health] ?? 0) + 20, "health survives while there is audio")
        let gone = try assertOldestReplaced(oldest, in: database, rounds: 20)
        // What the last chunk that went left unused (less than a chunk) may be filled.
        XCTAssertLessThanOrEqual(try database.storedPayloadBytes(), stored + Int64(Self.audioBytes), "the queue did not grow")
        XCTAssertGreaterThan(fs.freeBytes, 0)
        XCTAssertEqual(try database.integrityCheck(), "ok")
        print("measured: own backlog on a 40 MB tmpfs: wrote \(describe(written)), kept \(describe(after)); "
              + "20 rounds below the floor replaced \(gone.count) chunks; free \(fs.freeBytes) bytes")
    }

    func testAnotherProgramFillingTheDiskDeletesNoPendingRecordOnTmpfs() throws {
        try diskFilledByAnotherProgram(.tmpfs)
    }

    func testAnotherProgramFillingTheDiskDeletesNoPendingRecordOnExt4() throws {
        try diskFilledByAnotherProgram(.ext4)
    }

    /// Another program takes the last byte and holds it while capture goes on for long:
    /// nothing pending is deleted for its sake; each new capture replaces the oldest
    /// records as it arrives, so the queue keeps its size and holds the newest data.
    func diskFilledByAnotherProgram(_ kind: SmallFilesystem.Kind) throws {
        let fs = try mount(kind)
        let database = try AgentDatabase(path: fs.file("agent.sqlite"))
        let storageGuard = StorageGuard(database: database, limits: StorageLimits(minFreeBytes: floor, maxQueueBytes: noCap))
        let written = try writeBacklog(database, audio: 150)          // 12 MB of audio
        XCTAssertFalse(storageGuard.pass().deletedAny, "plenty of room: nothing to do")
        XCTAssertTrue(storageGuard.reserve.isInPlace)
        let stored = try database.storedPayloadBytes()

        let filler = try fs.fillWithAnotherProgram()
        XCTAssertLessThan(fs.freeBytes, 64 * 1_024)
        for _ in 0..<3 {
            let report = storageGuard.pass()
            XCTAssertNil(report.error)
            XCTAssertEqual(report.evictedPending, 0, "a pass deletes no pending record when the disk was filled by something else")
        }
        XCTAssertTrue(storageGuard.isBelowFloor)
        XCTAssertEqual(try pending(database), written, "the whole backlog is kept")
        let event = try XCTUnwrap(database.agentState.latestEvent(code: .storageFull))
        XCTAssertTrue(event.message.contains("the disk was filled by something else"), event.message)
        XCTAssertTrue(event.message.contains("The backlog is kept (450 pending records)"), event.message)

        // The other program holds the disk while 100 chunks' worth of capture arrives.
        let oldest = try microphoneIDs(database)
        try captureWhileFull(database, rounds: 100)
        for _ in 0..<3 { XCTAssertEqual(storageGuard.pass().evictedPending, 0) }
        let after = try pending(database)
        XCTAssertEqual(after[.location], (written[.location] ?? 0) + 100, "location survives")
        XCTAssertEqual(after[.health], (written[.health] ?? 0) + 100, "health survives")
        let gone = try assertOldestReplaced(oldest, in: database, rounds: 100)
        XCTAssertEqual(try database.housekeeping.evictedTotals()[.microphone], Int64(gone.count))
        XCTAssertEqual(try database.housekeeping.evictedTotals()[.location], 0)
        XCTAssertLessThanOrEqual(try database.storedPayloadBytes(), stored, "the queue did not grow")
        XCTAssertTrue(FileManager.default.fileExists(atPath: fs.file("filler")), "the other program's file is not ours to touch")
        XCTAssertEqual(try database.integrityCheck(), "ok")

        // The other program lets go: the queue may grow again, and nothing more goes.
        XCTAssertEqual(unlink(fs.file("filler")), 0)
        storageGuard.pass()
        XCTAssertFalse(storageGuard.isBelowFloor)
        XCTAssertNil(try database.agentState.value(AgentStateKey.storageBelowFloorSince))
        XCTAssertTrue(storageGuard.reserve.isInPlace, "the reserve is made again")
        let evicted = try database.housekeeping.evictedTotals()[.microphone]
        try captureWhileFull(database, rounds: 10)
        XCTAssertEqual(try database.housekeeping.evictedTotals()[.microphone], evicted)
        XCTAssertGreaterThan(try database.storedPayloadBytes(), stored, "above the floor the queue grows")
        print("measured: another program (\(filler) bytes) on a 40 MB \(kind): backlog \(describe(written)) kept; "
              + "100 rounds at 0 bytes free replaced \(gone.count) chunks, nothing else")
    }

    /// Below the floor, what the server already has goes before any pending record: new
    /// captures replace uploaded and failed records first, and the pass deletes the rest
    /// of them to give the floor back; pending records stay.
    func testBelowTheFloorUploadedAndFailedRecordsGoFirstAndPendingStay() throws {
        let fs = try mount()
        let database = try AgentDatabase(path: fs.file("agent.sqlite"))
        let storageGuard = StorageGuard(database: database, limits: StorageLimits(minFreeBytes: floor, maxQueueBytes: noCap))
        try writeBacklog(database, audio: 150)
        let audio = try database.recordQueue.records(stream: .microphone).map(\.seq)
        try database.recordQueue.markDelivered(Array(audio.prefix(60)))
        try database.recordQueue.markFailed([audio[60]], error: "refused")
        let pendingBefore = try pending(database)
        storageGuard.pass()
        // The marks' WAL goes into the database first: emptying it alone would give the
        // floor back.
        try database.housekeeping.checkpointWAL()
        try fs.fillWithAnotherProgram()

        // The ring: uploaded records make room for new captures, no pending record does.
        try captureWhileFull(database, rounds: 5)
        XCTAssertEqual(try database.housekeeping.evictedTotals()[.microphone], 0)
        let uploadedLeft = try database.recordQueue.count(stream: .microphone, status: .uploaded)
        XCTAssertLessThan(uploadedLeft, 60)
        XCTAssertGreaterThanOrEqual(uploadedLeft, 60 - 7, "a chunk's worth for each round, and a little more")
        XCTAssertEqual(try pending(database)[.microphone], (pendingBefore[.microphone] ?? 0) + 5)

        // The pass: the settled records left go to give the floor back; pending stay.
        let report = storageGuard.pass()
        XCTAssertNil(report.error)
        XCTAssertGreaterThan(report.deletedUploaded, 0, "\(report)")
        XCTAssertEqual(report.deletedFailed, 1)
        XCTAssertEqual(report.evictedPending, 0)
        XCTAssertEqual(try database.housekeeping.evictedTotals()[.microphone], 0)
        XCTAssertEqual(try pending(database)[.location], (pendingBefore[.location] ?? 0) + 5, "no pending record goes")
        XCTAssertEqual(try pending(database)[.microphone], (pendingBefore[.microphone] ?? 0) + 5)
    }

    /// Both at once: another program filled the disk and the queue is above a lowered
    /// cap. The cap takes the oldest audio down to it, and no further.
    func testBelowTheFloorAndAboveTheCapTheCapTakesTheOldestAudioAndNoMore() throws {
        let fs = try mount()
        let database = try AgentDatabase(path: fs.file("agent.sqlite"))
        let storageGuard = StorageGuard(database: database, limits: StorageLimits(minFreeBytes: floor, maxQueueBytes: noCap))
        let written = try writeBacklog(database, audio: 150)
        storageGuard.pass()
        try fs.fillWithAnotherProgram()
        XCTAssertEqual(storageGuard.pass().evictedPending, 0)

        let cap = 6 * StorageLimits.mebibyte
        storageGuard.update(StorageLimits(minFreeBytes: floor, maxQueueBytes: cap))
        let report = storageGuard.pass()
        XCTAssertNil(report.error)
        XCTAssertEqual(report.reasons, ["free disk below the floor", "queue above its cap"])
        // Below the floor the WAL keeps its blocks once copied in: room, not records.
        func records() -> Int64 { database.fileBytes() - database.walBytes() }
        XCTAssertLessThanOrEqual(records(), cap)
        XCTAssertGreaterThan(records(), cap - 2 * StorageLimits.mebibyte, "only down to the cap")
        XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .pending), written[.location])
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .pending), written[.health])
        XCTAssertGreaterThan(report.evicted[.microphone] ?? 0, 0)
        XCTAssertTrue(storageGuard.isBelowFloor || fs.freeBytes >= floor)
        // Capture goes on inside the cap.
        try captureWhileFull(database, rounds: 5)
        storageGuard.pass()
        XCTAssertLessThanOrEqual(records(), cap)
        XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .pending), (written[.location] ?? 0) + 5)
    }

    /// Without the reserve, a disk its own backlog filled wedges the queue: copying the
    /// WAL in needs the database to grow, and nothing can be deleted. This is what the
    /// reserve is for (and what the guard did before it had one).
    func testWithoutAReserveTheOwnBacklogWedgesTheQueue() throws {
        let fs = try mount()
        let database = try AgentDatabase(path: fs.file("agent.sqlite"))
        var written = try writeBacklog(database, audio: nil)
        fillTheLastBytes(database, into: &written)
        let storageGuard = StorageGuard(database: database, limits: StorageLimits(minFreeBytes: floor, maxQueueBytes: noCap, reserveBytes: 0))
        let report = storageGuard.pass()
        XCTAssertNotNil(report.error, "no room even to delete")
        XCTAssertFalse(report.deletedAny)
        XCTAssertThrowsError(try database.recordQueue.enqueue(record(.location)), "capture stays refused")
    }

    /// At 0 bytes SQLite cannot even open the database (the -shm and -wal files are made
    /// on open): opening hands the reserve back; with no reserve it says E004.
    func testTheQueueOpensOnAFullDiskByHandingTheReserveBackAndSaysE004WithoutOne() throws {
        let fs = try mount()
        let path = fs.file("agent.sqlite")
        let reserve = StorageReserve(databasePath: path, size: StorageLimits.defaultReserveBytes)
        do {
            let database = try AgentDatabase(path: path)
            try writeBacklog(database, audio: 20)
            StorageGuard(database: database, limits: StorageLimits(minFreeBytes: floor, maxQueueBytes: noCap)).pass()
        }
        XCTAssertTrue(reserve.isInPlace)
        try fs.fillWithAnotherProgram("filler-1")

        var reopened: AgentDatabase? = try AgentDatabase(path: path)
        XCTAssertFalse(reserve.isInPlace, "opening handed the reserve back")
        XCTAssertEqual(try reopened?.recordQueue.count(stream: .microphone, status: .pending), 20)
        reopened = nil

        try fs.fillWithAnotherProgram("filler-2")
        XCTAssertThrowsError(try AgentDatabase(path: path)) { error in
            XCTAssertTrue(self.isStorageFull(error), "\(error)")
            XCTAssertTrue("\(error)".contains("E004"), "\(error)")
        }
    }

    // MARK: Order and the cap

    func testCapEvictsUploadedThenFailedThenOldestAudioAndStatusCountsMatch() throws {
        let fs = try mount()
        let path = fs.file("agent.sqlite")
        let database = try AgentDatabase(path: path)
        try writeBacklog(database, audio: 40)                             // 3.2 MB of audio
        let audio = try database.recordQueue.records(stream: .microphone).map(\.seq)
        try database.recordQueue.markDelivered(Array(audio.suffix(3)))                  // the newest three: uploaded still go first
        let location = try database.recordQueue.records(stream: .location).map(\.seq)
        try database.recordQueue.markFailed([location[39]], error: "refused")

        var config = AgentConfig()
        config.storage.database = path
        config.storage.minFreeMB = 4
        config.storage.maxQueueMB = 2
        let storageGuard = StorageGuard(database: database, limits: config.storage.limits)
        let report = storageGuard.pass()

        XCTAssertNil(report.error)
        XCTAssertEqual(report.reasons, ["queue above its cap"])
        XCTAssertEqual(report.deletedUploaded, 3)
        XCTAssertEqual(report.deletedFailed, 1)
        XCTAssertLessThanOrEqual(database.fileBytes(), 2 * StorageLimits.mebibyte)
        XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .pending), 39, "no pending location goes")
        XCTAssertEqual(try database.recordQueue.count(stream: .health, status: .pending), 40, "no pending health goes")
        let left = try database.recordQueue.records(stream: .microphone).map(\.seq)
        let evicted = 37 - left.count
        XCTAssertGreaterThan(evicted, 0)
        XCTAssertEqual(left, Array(audio[evicted..<37]), "the oldest audio went, the newest stayed")
        XCTAssertEqual(report.evicted, [.microphone: evicted])
    }

    func testLocationAndHealthGoOldestFirstOnlyWhenNoAudioIsLeft() throws {
        let dir = try TemporaryDirectory("guard-order")
        let database = try AgentDatabase(path: dir.file("agent.sqlite"))
        try database.recordQueue.enqueue(record(.microphone))
        for _ in 0..<3_000 {
            try database.recordQueue.enqueue(record(.location))
            try database.recordQueue.enqueue(record(.health))
        }
        let allSeqs = try (database.recordQueue.records(stream: .location) + database.recordQueue.records(stream: .health)).map(\.seq).sorted()
        let storageGuard = StorageGuard(database: database, limits: StorageLimits(minFreeBytes: 0, maxQueueBytes: StorageLimits.mebibyte),
                                        sliceBytes: 64 * 1_024)
        let report = storageGuard.pass()

        XCTAssertNil(report.error)
        XCTAssertEqual(try database.recordQueue.count(stream: .microphone, status: .pending), 0, "the audio went first")
        XCTAssertLessThanOrEqual(database.fileBytes(), StorageLimits.mebibyte)
        let left = try (database.recordQueue.records(stream: .location) + database.recordQueue.records(stream: .health)).map(\.seq).sorted()
        XCTAssertFalse(left.isEmpty)
        XCTAssertEqual(left, Array(allSeqs.suffix(left.count)), "oldest first across location and health")
        let gone = Set(allSeqs).subtracting(left)
        XCTAssertEqual((report.evicted[.location] ?? 0) + (report.evicted[.health] ?? 0), gone.count)
        XCTAssertEqual(report.evicted[.microphone], 1)
        XCTAssertEqual(try database.housekeeping.evictedTotals(), [.microphone: 1, .location: Int64(report.evicted[.location] ?? 0),
                                                   .health: Int64(report.evicted[.health] ?? 0)])
    }

    func testAWriteRefusedForSpaceAsksForAPass() throws {
        let fs = try mount()
        let database = try AgentDatabase(path: fs.file("agent.sqlite"))
        let asked = expectation(description: "the storage-pressure handler runs")
        asked.assertForOverFulfill = false
        database.storagePressure.onRaise { asked.fulfill() }
        try fs.fillWithAnotherProgram()
        XCTAssertThrowsError(try writeBacklog(database, audio: 30))
        wait(for: [asked], timeout: 5)
        XCTAssertTrue(database.storagePressure.take())
        XCTAssertFalse(database.storagePressure.take(), "taking clears it")
    }

    // MARK: Configuration

    func testMaxQueueMBIsReadValidatedAndAutomaticByDefault() throws {
        let automatic = try AgentConfig(toml: "[storage]\nmin_free_mb = 50\n", file: "/etc/ariata/agent.toml")
        XCTAssertEqual(automatic.storage.maxQueueMB, 0)
        XCTAssertNil(automatic.storage.limits.maxQueueBytes)
        XCTAssertEqual(automatic.storage.limits.minFreeBytes, 50 * StorageLimits.mebibyte)
        let gib: Int64 = 1_073_741_824
        XCTAssertEqual(automatic.storage.limits.queueCap(filesystemBytes: 32 * gib), 2_048 * StorageLimits.mebibyte)
        XCTAssertEqual(automatic.storage.limits.queueCap(filesystemBytes: 4 * gib), gib, "a quarter of a small card")
        XCTAssertEqual(automatic.storage.limits.queueCap(filesystemBytes: nil), 2_048 * StorageLimits.mebibyte)

        let set = try AgentConfig(toml: "[storage]\nmax_queue_mb = 300\n", file: "a.toml")
        XCTAssertEqual(set.storage.limits.queueCap(filesystemBytes: 32 * gib), 300 * StorageLimits.mebibyte)
        XCTAssertTrue(ConfigWriter.render(set).contains("max_queue_mb = 300"))

        XCTAssertThrowsError(try AgentConfig(toml: "[storage]\nmax_queue_mb = \"2G\"\n", file: "/etc/ariata/agent.toml")) {
            XCTAssertTrue("\($0)".hasPrefix("/etc/ariata/agent.toml: storage.max_queue_mb: expected a whole number from 0 to 1000000 MB"), "\($0)")
        }
        XCTAssertThrowsError(try AgentConfig(toml: "[storage]\nmax_queue_mb = -1\n", file: "/etc/ariata/agent.toml")) {
            XCTAssertTrue("\($0)".contains("storage.max_queue_mb: -1 is out of range"), "\($0)")
        }
        XCTAssertEqual(StorageLimits(minFreeBytes: 0).effectiveFloor, StorageLimits.defaultReserveBytes,
                       "the floor is never below the reserve")
    }
}
