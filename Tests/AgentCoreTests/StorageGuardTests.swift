import AgentCore
import Foundation
import TestRigs
import XCTest

/// The storage guard on real SQLite files on real small file systems (tmpfs, ext4 on a
/// loop device): a disk filled to 0 bytes by the agent's own backlog or by another
/// program, eviction in value order, the queue cap, and the counts `status` shows.
final class StorageGuardTests: XCTestCase {
    static let audioBytes = 80_000      // a 30 s Opus chunk, base64 in its JSON record
    static let locationBytes = 300
    static let healthBytes = 200
    let floor = 4 * StorageLimits.mebibyte
    let noCap: Int64 = 1_000_000 * StorageLimits.mebibyte

    func mount(_ kind: SmallFilesystem.Kind = .tmpfs, megabytes: Int = 40) throws -> SmallFilesystem {
        do {
            return try SmallFilesystem.make(kind, megabytes: megabytes)
        } catch let error as CannotMount {
            throw XCTSkip(error.description)
        }
    }

    func record(_ stream: StreamName, at time: Date = Date()) -> NewRecord {
        let size = stream == .microphone ? Self.audioBytes : stream == .location ? Self.locationBytes : Self.healthBytes
        return NewRecord(stream: stream, capturedAt: time, payload: Data("\"\(String(repeating: "a", count: size - 2))\"".utf8))
    }

    func pending(_ queue: SQLiteQueue) throws -> [StreamName: Int] {
        Dictionary(uniqueKeysWithValues: try StreamName.allCases.map { ($0, try queue.count(stream: $0, status: .pending)) })
    }

    func describe(_ counts: [StreamName: Int]) -> String {
        StreamName.allCases.map { "\($0.rawValue) \(counts[$0] ?? 0)" }.joined(separator: ", ")
    }

    func isStorageFull(_ error: Error) -> Bool {
        if case .storageFull = error as? QueueError { return true }
        return false
    }

    /// Writes a backlog: one audio chunk, then a location fix and a health sample, over
    /// and over, `audio` times (or until the disk is full when nil). Returns what was written.
    @discardableResult
    func writeBacklog(_ queue: SQLiteQueue, audio: Int?) throws -> [StreamName: Int] {
        var written: [StreamName: Int] = [:]
        var round = 0
        while audio.map({ round < $0 }) ?? true {
            round += 1
            for stream in [StreamName.microphone, .location, .health] {
                do {
                    try queue.enqueue(record(stream))
                    written[stream, default: 0] += 1
                } catch where audio == nil && isStorageFull(error) {
                    return written
                }
            }
        }
        return written
    }

    /// Small writes until three in a row are refused: the disk is at 0 bytes for SQLite.
    func fillTheLastBytes(_ queue: SQLiteQueue, into written: inout [StreamName: Int]) {
        var refused = 0
        while refused < 3 {
            do {
                try queue.enqueue(record(.location))
                written[.location, default: 0] += 1
                refused = 0
            } catch {
                refused += 1
            }
        }
    }

    // MARK: A full disk

    func testDiskFilledToZeroByTheAgentsOwnBacklogEvictsAudioAndCaptureResumes() throws {
        let fs = try mount()
        let queue = try SQLiteQueue(path: fs.file("agent.sqlite"))
        let storageGuard = StorageGuard(queue: queue, limits: StorageLimits(minFreeBytes: floor, maxQueueBytes: noCap))
        storageGuard.pass()
        XCTAssertTrue(storageGuard.reserve.isHeld, "the first pass makes the reserve while there is room")

        // The server is down: nothing is uploaded, the backlog grows until the disk is full.
        var written = try writeBacklog(queue, audio: nil)
        fillTheLastBytes(queue, into: &written)
        XCTAssertLessThan(fs.freeBytes, 64 * 1_024, "the disk is full")
        XCTAssertThrowsError(try queue.enqueue(record(.location))) { XCTAssertTrue(self.isStorageFull($0), "\($0)") }
        XCTAssertThrowsError(try queue.enqueue(record(.microphone)))
        let before = try pending(queue)
        XCTAssertEqual(before[.location], written[.location])

        let report = storageGuard.pass()
        XCTAssertNil(report.error)
        XCTAssertTrue(report.reserveReleased, "the reserve gave SQLite room to delete")
        XCTAssertTrue(report.reasons.contains("free disk below the floor"), "\(report.reasons)")
        let after = try pending(queue)
        XCTAssertEqual(after[.location], before[.location], "location survives while there is audio")
        XCTAssertEqual(after[.health], before[.health], "health survives while there is audio")
        XCTAssertGreaterThan(after[.microphone] ?? 0, 0, "only as much audio as needed goes")
        XCTAssertEqual(report.evicted[.microphone], (before[.microphone] ?? 0) - (after[.microphone] ?? 0))
        XCTAssertEqual(report.evicted[.location] ?? 0, 0)
        XCTAssertEqual(try queue.evictedTotals()[.microphone], Int64(report.evicted[.microphone] ?? -1))
        XCTAssertGreaterThanOrEqual(fs.freeBytes, floor, "back above the floor")
        XCTAssertTrue(storageGuard.reserve.isHeld, "the reserve is made again")
        XCTAssertLessThan(report.peakOwnWriteBytes, storageGuard.reserve.size, "the guard's own writes fit in the reserve")

        // Capture works again.
        try queue.enqueue(record(.microphone))
        try queue.enqueue(record(.location))
        try queue.enqueue(record(.health))
        XCTAssertEqual(try queue.integrityCheck(), "ok")
        let event = try XCTUnwrap(queue.latestEvent(code: .storageFull))
        XCTAssertTrue(event.message.contains("location 0, microphone \(report.evicted[.microphone] ?? -1), health 0"), event.message)
        print("measured: own backlog on a 40 MB tmpfs: wrote \(describe(written)), evicted \(describe(report.evicted)), "
              + "free \(report.freeBytesBefore ?? -1) -> \(report.freeBytesAfter ?? -1) bytes, "
              + "peak own write \(report.peakOwnWriteBytes) bytes, reserve \(storageGuard.reserve.size)")
    }

    func testDiskFilledToZeroByAnotherProgramOnTmpfs() throws {
        try diskFilledByAnotherProgram(.tmpfs)
    }

    func testDiskFilledToZeroByAnotherProgramOnExt4() throws {
        try diskFilledByAnotherProgram(.ext4)
    }

    func diskFilledByAnotherProgram(_ kind: SmallFilesystem.Kind) throws {
        let fs = try mount(kind)
        let queue = try SQLiteQueue(path: fs.file("agent.sqlite"))
        let storageGuard = StorageGuard(queue: queue, limits: StorageLimits(minFreeBytes: floor, maxQueueBytes: noCap))
        let written = try writeBacklog(queue, audio: 150)          // 12 MB of audio
        XCTAssertFalse(storageGuard.pass().deletedAny, "plenty of room: nothing to do")
        XCTAssertTrue(storageGuard.reserve.isHeld)

        let filler = try fs.fillWithAnotherProgram()
        XCTAssertLessThan(fs.freeBytes, 64 * 1_024)
        var refused = 0
        for _ in 0..<20 {
            do { try queue.enqueue(record(.microphone)) } catch { refused += 1 }
        }
        XCTAssertGreaterThan(refused, 0, "audio is refused on the full disk")

        let report = storageGuard.pass()
        XCTAssertNil(report.error)
        let after = try pending(queue)
        XCTAssertEqual(after[.location], written[.location], "location survives")
        XCTAssertEqual(after[.health], written[.health], "health survives")
        XCTAssertGreaterThan(report.evicted[.microphone] ?? 0, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: fs.file("filler")), "the other program's file is not ours to touch")
        XCTAssertTrue(storageGuard.reserve.isHeld, "the reserve is made again")
        XCTAssertGreaterThanOrEqual(fs.freeBytes, floor)
        try queue.enqueue(record(.microphone))
        try queue.enqueue(record(.location))
        XCTAssertEqual(try queue.integrityCheck(), "ok")
        print("measured: another program (\(filler) bytes) on a 40 MB \(kind): evicted \(describe(report.evicted)), "
              + "free \(report.freeBytesBefore ?? -1) -> \(report.freeBytesAfter ?? -1) bytes, "
              + "peak own write \(report.peakOwnWriteBytes) bytes")
    }

    /// Without the reserve, a disk its own backlog filled wedges the queue: copying the
    /// WAL in needs the database to grow, and nothing can be deleted. This is what the
    /// reserve is for (and what the guard did before it had one).
    func testWithoutAReserveTheOwnBacklogWedgesTheQueue() throws {
        let fs = try mount()
        let queue = try SQLiteQueue(path: fs.file("agent.sqlite"))
        var written = try writeBacklog(queue, audio: nil)
        fillTheLastBytes(queue, into: &written)
        let storageGuard = StorageGuard(queue: queue, limits: StorageLimits(minFreeBytes: floor, maxQueueBytes: noCap, reserveBytes: 0))
        let report = storageGuard.pass()
        XCTAssertNotNil(report.error, "no room even to delete")
        XCTAssertFalse(report.deletedAny)
        XCTAssertThrowsError(try queue.enqueue(record(.location)), "capture stays refused")
    }

    /// At 0 bytes SQLite cannot even open the database (the -shm and -wal files are made
    /// on open): opening hands the reserve back; with no reserve it says E004.
    func testTheQueueOpensOnAFullDiskByHandingTheReserveBackAndSaysE004WithoutOne() throws {
        let fs = try mount()
        let path = fs.file("agent.sqlite")
        let reserve = StorageReserve(databasePath: path, size: StorageLimits.defaultReserveBytes)
        do {
            let queue = try SQLiteQueue(path: path)
            try writeBacklog(queue, audio: 20)
            StorageGuard(queue: queue, limits: StorageLimits(minFreeBytes: floor, maxQueueBytes: noCap)).pass()
        }
        XCTAssertTrue(reserve.isHeld)
        try fs.fillWithAnotherProgram("filler-1")

        var reopened: SQLiteQueue? = try SQLiteQueue(path: path)
        XCTAssertFalse(reserve.isHeld, "opening handed the reserve back")
        XCTAssertEqual(try reopened?.count(stream: .microphone, status: .pending), 20)
        reopened = nil

        try fs.fillWithAnotherProgram("filler-2")
        XCTAssertThrowsError(try SQLiteQueue(path: path)) { error in
            XCTAssertTrue(self.isStorageFull(error), "\(error)")
            XCTAssertTrue("\(error)".contains("E004"), "\(error)")
        }
    }

    // MARK: Order and the cap

    func testCapEvictsUploadedThenFailedThenOldestAudioAndStatusCountsMatch() throws {
        let fs = try mount()
        let database = fs.file("agent.sqlite")
        let queue = try SQLiteQueue(path: database)
        try writeBacklog(queue, audio: 40)                             // 3.2 MB of audio
        let audio = try queue.records(stream: .microphone).map(\.seq)
        try queue.markUploaded(Array(audio.suffix(3)))                  // the newest three: uploaded still go first
        let location = try queue.records(stream: .location).map(\.seq)
        try queue.markFailed([location[39]], error: "refused")

        var config = AgentConfig()
        config.storage.database = database
        config.storage.minFreeMB = 4
        config.storage.maxQueueMB = 2
        let storageGuard = StorageGuard(queue: queue, limits: config.storage.limits)
        let report = storageGuard.pass()

        XCTAssertNil(report.error)
        XCTAssertEqual(report.reasons, ["queue above its cap"])
        XCTAssertEqual(report.deletedUploaded, 3)
        XCTAssertEqual(report.deletedFailed, 1)
        XCTAssertLessThanOrEqual(queue.fileBytes(), 2 * StorageLimits.mebibyte)
        XCTAssertEqual(try queue.count(stream: .location, status: .pending), 39, "no pending location goes")
        XCTAssertEqual(try queue.count(stream: .health, status: .pending), 40, "no pending health goes")
        let left = try queue.records(stream: .microphone).map(\.seq)
        let evicted = 37 - left.count
        XCTAssertGreaterThan(evicted, 0)
        XCTAssertEqual(left, Array(audio[evicted..<37]), "the oldest audio went, the newest stayed")
        XCTAssertEqual(report.evicted, [.microphone: evicted])

        // status --json and the text say the same.
        let status = StatusReader().read(config: config, configFile: fs.file("agent.toml"))
        let json = try status.json()
        try assertMatchesSchema(json)
        let decoded = try StatusReport.decode(json)
        XCTAssertEqual(decoded.streams.map(\.evicted), [0, Int64(evicted), 0])
        XCTAssertEqual(decoded.database.maxQueueBytes, 2 * StorageLimits.mebibyte)
        XCTAssertEqual(decoded.database.reserveBytes, StorageLimits.defaultReserveBytes)
        let text = StatusText(colour: false).render(status)
        XCTAssertTrue(text.contains("evicted    location 0, microphone \(evicted), health 0"), text)
        XCTAssertTrue(text.contains("E004 storage guard"), text)
        XCTAssertTrue(text.contains("(location 0, microphone \(evicted), health 0)"), "the warning quotes the counts: \(text)")
    }

    func testLocationAndHealthGoOldestFirstOnlyWhenNoAudioIsLeft() throws {
        let dir = try TemporaryDirectory("guard-order")
        let queue = try SQLiteQueue(path: dir.file("agent.sqlite"))
        try queue.enqueue(record(.microphone))
        for _ in 0..<3_000 {
            try queue.enqueue(record(.location))
            try queue.enqueue(record(.health))
        }
        let allSeqs = try (queue.records(stream: .location) + queue.records(stream: .health)).map(\.seq).sorted()
        let storageGuard = StorageGuard(queue: queue, limits: StorageLimits(minFreeBytes: 0, maxQueueBytes: StorageLimits.mebibyte),
                                        sliceBytes: 64 * 1_024)
        let report = storageGuard.pass()

        XCTAssertNil(report.error)
        XCTAssertEqual(try queue.count(stream: .microphone, status: .pending), 0, "the audio went first")
        XCTAssertLessThanOrEqual(queue.fileBytes(), StorageLimits.mebibyte)
        let left = try (queue.records(stream: .location) + queue.records(stream: .health)).map(\.seq).sorted()
        XCTAssertFalse(left.isEmpty)
        XCTAssertEqual(left, Array(allSeqs.suffix(left.count)), "oldest first across location and health")
        let gone = Set(allSeqs).subtracting(left)
        XCTAssertEqual((report.evicted[.location] ?? 0) + (report.evicted[.health] ?? 0), gone.count)
        XCTAssertEqual(report.evicted[.microphone], 1)
        XCTAssertEqual(try queue.evictedTotals(), [.microphone: 1, .location: Int64(report.evicted[.location] ?? 0),
                                                   .health: Int64(report.evicted[.health] ?? 0)])
    }

    func testAWriteRefusedForSpaceAsksForAPass() throws {
        let fs = try mount()
        let queue = try SQLiteQueue(path: fs.file("agent.sqlite"))
        let asked = expectation(description: "the storage-pressure handler runs")
        asked.assertForOverFulfill = false
        queue.storagePressure.onRaise { asked.fulfill() }
        try fs.fillWithAnotherProgram()
        XCTAssertThrowsError(try writeBacklog(queue, audio: 30))
        wait(for: [asked], timeout: 5)
        XCTAssertTrue(queue.storagePressure.take())
        XCTAssertFalse(queue.storagePressure.take(), "taking clears it")
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

    // MARK: Helpers

    /// Validates with Debian's python3-jsonschema against docs/status.schema.json.
    func assertMatchesSchema(_ json: Data, file: StaticString = #filePath, line: UInt = #line) throws {
        let dir = try TemporaryDirectory("status-schema")
        let schema = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/status.schema.json").path
        let path = dir.file("status.json")
        try json.write(to: URL(fileURLWithPath: path))
        let check = try ChildProcess("/usr/bin/python3", ["-c", """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1])); doc = json.load(open(sys.argv[2]))
            jsonschema.Draft202012Validator(schema).validate(doc)
            """, schema, path], logDirectory: dir.path)
        XCTAssertEqual(check.wait(), 0, "status --json does not match docs/status.schema.json: \(check.stderr())", file: file, line: line)
    }
}
