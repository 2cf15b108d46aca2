import AgentCore
import Foundation
import TestRigs
import XCTest

/// `ariata-agent run` with its queue on a 40 MB tmpfs that another program fills to
/// 0 bytes: the daemon's storage guard evicts the oldest audio by itself, keeps location,
/// makes its reserve again, and capture goes on; `status` says what was evicted.
final class DaemonFullDiskTests: XCTestCase {
    func testAnotherProgramFillsTheDiskAndCaptureResumesWithinAHealthTick() throws {
        let fs = try mount()
        let database = fs.file("agent.sqlite")

        let backlog = try writeAudioBacklog(database)

        let healthInterval = 2
        let rig = try DaemonRig(healthInterval: healthInterval, databasePath: database, storageConfig: "min_free_mb = 4")
        rig.receiver.stop()   // the server is down: nothing leaves the queue
        try rig.startAgent()
        // A failing assertion must not leave the daemon running on the mount.
        defer { _ = rig.stopAgent() }
        let queue = try rig.openQueue()
        let reserve = database + ".reserve"
        try waitUntil("the daemon's reserve file and a location record", timeout: 60) {
            try FileManager.default.fileExists(atPath: reserve) && queue.records(stream: .location).count >= 1
        }

        _ = rig.notifySocket.drain()
        try fs.fillWithAnotherProgram()
        let filledAt = Date()
        XCTAssertLessThan(fs.freeBytes, 64 * 1_024, "the disk is full")
        let before = Set(try StreamName.allCases.flatMap { try queue.records(stream: $0) }.map(\.id))
        let locationBefore = try queue.records(stream: .location).count

        // Capture resumes: new audio and new location records after the guard's pass.
        var resumed: [StreamName: Date] = [:]
        try waitUntil("new audio and location records after the disk filled", timeout: 90, interval: 0.1) {
            guard try queue.latestEvent(code: .storageFull) != nil else { return false }
            for stream in [StreamName.microphone, .location] where resumed[stream] == nil {
                if try queue.records(stream: stream).contains(where: { !before.contains($0.id) }) { resumed[stream] = Date() }
            }
            return resumed.count == 2
        }
        // The health checks went on through it: the coordinator stored health after the
        // disk filled and kept telling systemd the daemon is alive.
        try waitUntil("a health check after the disk filled", timeout: 30) {
            try queue.storedHealth().contains { $0.component == "location" && $0.checkedAt > filledAt }
        }
        try waitUntil("WATCHDOG=1 after the disk filled", timeout: 30) { rig.notifySocket.drain().contains("WATCHDOG=1") }
        let event = try XCTUnwrap(queue.latestEvent(code: .storageFull))
        XCTAssertTrue(event.message.contains("storage guard"), event.message)
        try waitUntil("the reserve made again", timeout: 30) {
            var info = stat()
            return stat(reserve, &info) == 0 && Int64(info.st_blocks) * 512 >= StorageLimits.defaultReserveBytes
        }

        // Only old audio went; every location record is still there.
        let left = Set(try queue.records(stream: .microphone).map(\.id))
        let evictedBacklog = backlog.filter { !left.contains($0) }.count
        XCTAssertGreaterThan(evictedBacklog, 0)
        XCTAssertGreaterThanOrEqual(try queue.records(stream: .location).count, locationBefore, "no location record was evicted")
        let totals = try queue.evictedTotals()
        XCTAssertEqual(totals[.location], 0)
        XCTAssertEqual(totals[.health], 0)
        XCTAssertEqual(totals[.microphone], Int64(evictedBacklog), "the oldest audio, the backlog, went first")

        // status --json and the text show it.
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        let json = try cli.run(["status", "--json"])
        let report = try StatusReport.decode(Data(json.stdout.utf8))
        XCTAssertEqual(report.streams.first { $0.name == "microphone" }?.evicted, Int64(evictedBacklog))
        XCTAssertEqual(report.streams.first { $0.name == "location" }?.evicted, 0)
        XCTAssertEqual(report.database.lastStorageGuard?.code, "E004")
        XCTAssertEqual(report.database.reserveBytes, StorageLimits.defaultReserveBytes)
        let text = try cli.run(["status"], environment: ["NO_COLOR": "1"])
        XCTAssertTrue(text.stdout.contains("evicted    location 0, microphone \(evictedBacklog), health 0"), text.stdout)
        XCTAssertTrue(text.stdout.contains("E004 storage guard"), text.stdout)

        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        // What happened, in the daemon's words (the journal's view).
        for line in rig.agentLog.split(separator: "\n") where line.contains("E004") { print("agent log: \(line)") }
        func after(_ stream: StreamName) -> String {
            String(format: "%.1f s", (resumed[stream] ?? Date()).timeIntervalSince(filledAt))
        }
        print("measured: disk full to the guard's pass \(String(format: "%.1f s", event.at.timeIntervalSince(filledAt))), "
              + "to the first new record: location \(after(.location)), audio \(after(.microphone)) "
              + "(health_interval \(healthInterval) s, location interval 2 s, 6 s audio chunks); evicted \(evictedBacklog) backlog chunks")
    }

    /// The daemon started on a disk that is already at 0 bytes (a reboot after the disk
    /// filled): it starts, its first health check makes room, and it captures.
    func testTheDaemonStartsOnAFullDiskAndMakesRoomByItself() throws {
        let fs = try mount()
        let database = fs.file("agent.sqlite")
        let backlog = try writeAudioBacklog(database)
        do {
            // The reserve a previous run of the daemon made.
            let queue = try SQLiteQueue(path: database)
            StorageGuard(queue: queue, limits: StorageLimits(minFreeBytes: 4 * StorageLimits.mebibyte,
                                                             maxQueueBytes: 1_000 * StorageLimits.mebibyte)).pass()
        }
        XCTAssertTrue(StorageReserve(databasePath: database, size: StorageLimits.defaultReserveBytes).isHeld)
        try fs.fillWithAnotherProgram()
        XCTAssertLessThan(fs.freeBytes, 64 * 1_024, "the disk is full before the daemon starts")

        let rig = try DaemonRig(healthInterval: 2, databasePath: database, storageConfig: "min_free_mb = 4")
        rig.receiver.stop()
        try rig.startAgent()
        // A failing assertion must not leave the daemon running on the mount.
        defer { _ = rig.stopAgent() }
        // Readers cannot open the database until the daemon has handed the reserve back.
        var opened: SQLiteQueue?
        try waitUntil("the database readable again", timeout: 30) {
            opened = try? SQLiteQueue(readOnlyPath: database)
            return (try? opened?.counts()) != nil
        }
        let queue = try XCTUnwrap(opened)
        do {
            try waitUntil("location and audio captured on the disk that was full", timeout: 90, interval: 0.2) {
                try queue.records(stream: .location).count >= 1
                    && queue.records(stream: .microphone).contains { !backlog.contains($0.id) }
            }
        } catch {
            XCTFail("the daemon said:\n\(rig.agentLog)")
            throw error
        }
        try waitUntil("the reserve made again", timeout: 30) {
            StorageReserve(databasePath: database, size: StorageLimits.defaultReserveBytes).isHeld
        }
        XCTAssertEqual(try queue.evictedTotals()[.location], 0)
        XCTAssertGreaterThan(try queue.evictedTotals()[.microphone] ?? 0, 0)
        XCTAssertTrue(rig.agent?.isRunning ?? false)
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
    }

    /// A cap lowered in the config and applied with SIGHUP: the oldest audio goes at once,
    /// location stays, and `status` counts what went.
    func testLoweringTheCapWithSIGHUPEvictsTheOldestAudio() throws {
        let directory = try TemporaryDirectory("daemon-cap")
        let database = directory.file("agent.sqlite")
        let backlog = try writeAudioBacklog(database)
        let rig = try DaemonRig(healthInterval: 2, databasePath: database, storageConfig: "min_free_mb = 4")
        rig.receiver.stop()
        try rig.startAgent()
        // A failing assertion must not leave the daemon running on the mount.
        defer { _ = rig.stopAgent() }
        let queue = try rig.openQueue()
        try waitUntil("a location record", timeout: 60) { try queue.records(stream: .location).count >= 1 }
        XCTAssertEqual(try queue.evictedTotals()[.microphone], 0, "the automatic cap of a big disk is far away")

        let config = try String(contentsOfFile: rig.configPath, encoding: .utf8)
        try config.replacingOccurrences(of: "min_free_mb = 4", with: "min_free_mb = 4\nmax_queue_mb = 2")
            .write(toFile: rig.configPath, atomically: true, encoding: .utf8)
        let locationBefore = try queue.records(stream: .location).count
        rig.agent?.signal(SIGHUP)
        try waitUntil("the queue under its new cap", timeout: 60) {
            (try queue.evictedTotals()[.microphone] ?? 0) > 0 && queue.fileBytes() <= 2 * StorageLimits.mebibyte
        }
        let left = Set(try queue.records(stream: .microphone).map(\.id))
        let evicted = backlog.filter { !left.contains($0) }
        XCTAssertEqual(Array(backlog.prefix(evicted.count)), evicted, "the oldest went")
        XCTAssertGreaterThanOrEqual(try queue.records(stream: .location).count, locationBefore, "location stays")
        XCTAssertEqual(try queue.evictedTotals()[.location], 0)
        let status = try AgentCLI(directory: rig.directory.path, configPath: rig.configPath).run(["status", "--json"])
        let report = try StatusReport.decode(Data(status.stdout.utf8))
        XCTAssertEqual(report.database.maxQueueBytes, 2 * StorageLimits.mebibyte)
        XCTAssertEqual(report.streams.first { $0.name == "microphone" }?.evicted, try queue.evictedTotals()[.microphone])
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
    }

    func mount() throws -> SmallFilesystem {
        do {
            return try SmallFilesystem.make(.tmpfs, megabytes: 40)
        } catch let error as CannotMount {
            throw XCTSkip(error.description)
        }
    }

    /// An old backlog of audio, as after a week offline: 120 chunks (9.6 MB), pending,
    /// written before the daemon starts. Returns their ids, oldest first.
    func writeAudioBacklog(_ database: String) throws -> [UUID] {
        let queue = try SQLiteQueue(path: database)
        let payload = Data("\"\(String(repeating: "a", count: 79_998))\"".utf8)
        return try (0..<120).map { i in
            let record = NewRecord(stream: .microphone, capturedAt: Date().addingTimeInterval(-86_400 + Double(i) * 30),
                                   payload: payload)
            try queue.enqueue(record)
            return record.id
        }
    }
}
