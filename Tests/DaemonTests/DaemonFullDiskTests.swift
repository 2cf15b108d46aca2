import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// `ariata-agent run` with its queue on a 40 MB tmpfs that another program fills to
/// 0 bytes and holds: the daemon keeps its whole backlog, says so (log, status, metrics),
/// and captures on, each new record taking the place of the oldest audio as it arrives;
/// when the other program lets go, the queue grows again and the reserve is made again.
final class DaemonFullDiskTests: XCTestCase {
    func testAnotherProgramFillsTheDiskAndTheBacklogIsKeptWhileCaptureGoesOn() throws {
        let fs = try mount()
        let databasePath = fs.file("agent.sqlite")

        let backlog = try writeAudioBacklog(databasePath)

        // The cap well above the queue (a quarter of the 40 MB would be the backlog's size):
        // this is the floor's test.
        let rig = try DaemonRig(checkInterval: 2, databasePath: databasePath, storageConfig: "min_free_mb = 4\nmax_queue_mb = 100")
        rig.receiver.stop()   // the server is down: nothing leaves the queue
        try rig.startAgent()
        // A failing assertion must not leave the daemon running on the mount.
        defer { _ = rig.stopAgent() }
        let database = try rig.openDatabase()
        let reserve = StorageReserve(databasePath: databasePath, size: StorageLimits.defaultReserveBytes)
        try waitUntil("the daemon's reserve file and a location record", timeout: 60) {
            try reserve.isInPlace && database.recordQueue.records(stream: .location).count >= 1
        }

        _ = rig.notifySocket.drain()
        try fs.fillWithAnotherProgram()
        let filledAt = Date()
        XCTAssertLessThan(fs.freeBytes, 64 * 1_024, "the disk is full")
        let storedAtFill = try database.storedPayloadBytes()
        let before = try StreamName.allCases.flatMap { try database.recordQueue.records(stream: $0) }
        let beforeIDs = Set(before.map(\.id))

        // The other program holds the disk while capture goes on for a while: new audio
        // and location records keep arriving.
        var resumed: [StreamName: Date] = [:]
        try waitUntil("new audio and location records after the disk filled", timeout: 90, interval: 0.1) {
            for stream in [StreamName.microphone, .location] where resumed[stream] == nil {
                if try database.recordQueue.records(stream: stream).contains(where: { !beforeIDs.contains($0.id) }) { resumed[stream] = Date() }
            }
            return resumed.count == 2
        }
        Thread.sleep(forTimeInterval: 30)
        let event = try XCTUnwrap(database.agentState.latestEvent(code: .storageFull))
        XCTAssertTrue(event.message.contains("the disk was filled by something else"), event.message)
        // The maintenance rounds went on through it and kept telling systemd the daemon is alive.
        try waitUntil("a maintenance round after the disk filled", timeout: 30) {
            try database.agentState.storedLiveness().contains { $0.component == "location" && $0.checkedAt > filledAt }
        }
        try waitUntil("WATCHDOG=1 after the disk filled", timeout: 30) { rig.notifySocket.drain().contains("WATCHDOG=1") }

        // Every record from before is there but the oldest audio that new captures
        // replaced, one for one as they arrived; no location or health record went.
        let now = try StreamName.allCases.flatMap { try database.recordQueue.records(stream: $0) }
        let nowIDs = Set(now.map(\.id))
        let gone = before.filter { !nowIDs.contains($0.id) }
        XCTAssertTrue(gone.allSatisfy { $0.stream == .microphone }, "only audio went: \(gone.map(\.stream))")
        let goneBacklog = backlog.filter { !nowIDs.contains($0) }
        XCTAssertEqual(goneBacklog.count, gone.count, "what went is the old backlog")
        XCTAssertEqual(Array(backlog.prefix(goneBacklog.count)), goneBacklog, "the oldest went first")
        let newRecords = now.filter { !beforeIDs.contains($0.id) }
        let newBytes = newRecords.reduce(0) { $0 + $1.payload.count }
        XCTAssertGreaterThan(newRecords.filter { $0.stream == .microphone }.count, 0)
        XCTAssertLessThanOrEqual(goneBacklog.count, newBytes / 80_000 + 2, "only as much as the new captures needed")
        XCTAssertLessThanOrEqual(try database.storedPayloadBytes(), storedAtFill + 80_000, "the queue did not grow")
        let totals = try database.housekeeping.evictedTotals()
        XCTAssertEqual(totals[.location], 0)
        XCTAssertEqual(totals[.health], 0)
        XCTAssertEqual(totals[.microphone], Int64(goneBacklog.count))

        // status --json, the text and the metrics show it.
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        let json = try cli.run(["status", "--json"])
        let report = try StatusReport.decode(Data(json.stdout.utf8))
        XCTAssertNotNil(report.database.belowFloorSince)
        XCTAssertEqual(report.streams.first { $0.name == "microphone" }?.evicted, Int64(goneBacklog.count))
        XCTAssertEqual(report.streams.first { $0.name == "location" }?.evicted, 0)
        XCTAssertEqual(report.database.lastStorageGuard?.code, "E004")
        let text = try cli.run(["status"], environment: ["NO_COLOR": "1"])
        XCTAssertTrue(text.stdout.contains("the disk was filled by something else"), text.stdout)
        let metrics = try cli.run(["status", "--prometheus"])
        XCTAssertTrue(metrics.stdout.contains("ariata_agent_storage_below_floor 1"), metrics.stdout)

        // The other program lets go: the queue may grow again and the reserve comes back.
        XCTAssertEqual(unlink(fs.file("filler")), 0)
        try waitUntil("the floor given back and the reserve made again", timeout: 30) {
            try reserve.isInPlace && database.agentState.value(AgentStateKey.storageBelowFloorSince) == nil
        }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        // What happened, in the daemon's words (the journal's view).
        for line in rig.agentLog.split(separator: "\n") where line.contains("storage guard") { print("agent log: \(line)") }
        XCTAssertEqual(rig.agentLog.components(separatedBy: "the disk was filled by something else").count - 1, 1,
                       "said once for the episode")
        func after(_ stream: StreamName) -> String {
            String(format: "%.1f s", (resumed[stream] ?? Date()).timeIntervalSince(filledAt))
        }
        print("measured: disk full to the first new record: location \(after(.location)), audio \(after(.microphone)); "
              + "over \(Int(Date().timeIntervalSince(filledAt))) s at 0 bytes free, \(newRecords.count) new records "
              + "(\(newBytes) bytes) replaced \(goneBacklog.count) of \(backlog.count) backlog chunks; nothing else went")
    }

    /// The daemon started on a disk that is already at 0 bytes (a reboot after the disk
    /// filled): it opens its queue with the reserve's space and captures, new records
    /// taking the place of the oldest audio; the backlog is otherwise kept.
    func testTheDaemonStartsOnAFullDiskAndCapturesInPlaceOfTheOldest() throws {
        let fs = try mount()
        let databasePath = fs.file("agent.sqlite")
        let backlog = try writeAudioBacklog(databasePath)
        do {
            // The reserve a previous run of the daemon made.
            let database = try AgentDatabase(path: databasePath)
            StorageGuard(database: database, limits: StorageLimits(minFreeBytes: 4 * StorageLimits.mebibyte,
                                                             maxQueueBytes: 1_000 * StorageLimits.mebibyte)).pass()
        }
        XCTAssertTrue(StorageReserve(databasePath: databasePath, size: StorageLimits.defaultReserveBytes).isInPlace)
        try fs.fillWithAnotherProgram()
        XCTAssertLessThan(fs.freeBytes, 64 * 1_024, "the disk is full before the daemon starts")

        let rig = try DaemonRig(checkInterval: 2, databasePath: databasePath, storageConfig: "min_free_mb = 4\nmax_queue_mb = 100")
        rig.receiver.stop()
        try rig.startAgent()
        // A failing assertion must not leave the daemon running on the mount.
        defer { _ = rig.stopAgent() }
        // Readers cannot open the database until the daemon has handed the reserve back.
        var opened: AgentDatabase?
        try waitUntil("the database readable again", timeout: 30) {
            opened = try? AgentDatabase(readOnlyPath: databasePath)
            return (try? opened?.recordQueue.counts()) != nil
        }
        let database = try XCTUnwrap(opened)
        do {
            try waitUntil("location and audio captured on the disk that was full", timeout: 90, interval: 0.2) {
                try database.recordQueue.records(stream: .location).count >= 1
                    && database.recordQueue.records(stream: .microphone).contains { !backlog.contains($0.id) }
            }
        } catch {
            XCTFail("the daemon said:\n\(rig.agentLog)")
            throw error
        }
        let left = Set(try database.recordQueue.records(stream: .microphone).map(\.id))
        let gone = backlog.filter { !left.contains($0) }
        let newAudio = try database.recordQueue.records(stream: .microphone).filter { !backlog.contains($0.id) }
        XCTAssertEqual(Array(backlog.prefix(gone.count)), gone, "the oldest went first")
        XCTAssertLessThanOrEqual(gone.count, newAudio.reduce(0) { $0 + $1.payload.count } / 80_000 + 3,
                                 "only as much as the new captures needed")
        XCTAssertEqual(try database.housekeeping.evictedTotals()[.location], 0)
        XCTAssertNotNil(try database.agentState.value(AgentStateKey.storageBelowFloorSince))
        XCTAssertTrue(rig.agent?.isRunning ?? false)
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
    }

    /// A cap lowered in the config and applied with SIGHUP: the oldest audio goes at once,
    /// location stays, and `status` counts what went.
    func testLoweringTheCapWithSIGHUPEvictsTheOldestAudio() throws {
        let directory = try TemporaryDirectory("daemon-cap")
        let databasePath = directory.file("agent.sqlite")
        let backlog = try writeAudioBacklog(databasePath)
        let rig = try DaemonRig(checkInterval: 2, databasePath: databasePath, storageConfig: "min_free_mb = 4")
        rig.receiver.stop()
        try rig.startAgent()
        // A failing assertion must not leave the daemon running on the mount.
        defer { _ = rig.stopAgent() }
        let database = try rig.openDatabase()
        try waitUntil("a location record", timeout: 60) { try database.recordQueue.records(stream: .location).count >= 1 }
        XCTAssertEqual(try database.housekeeping.evictedTotals()[.microphone], 0, "the automatic cap of a big disk is far away")

        let config = try String(contentsOfFile: rig.configPath, encoding: .utf8)
        try config.replacingOccurrences(of: "min_free_mb = 4", with: "min_free_mb = 4\nmax_queue_mb = 2")
            .write(toFile: rig.configPath, atomically: true, encoding: .utf8)
        let locationBefore = try database.recordQueue.records(stream: .location).count
        rig.agent?.signal(SIGHUP)
        try waitUntil("the queue under its new cap", timeout: 60) {
            (try database.housekeeping.evictedTotals()[.microphone] ?? 0) > 0 && database.fileBytes() <= 2 * StorageLimits.mebibyte
        }
        let left = Set(try database.recordQueue.records(stream: .microphone).map(\.id))
        let evicted = backlog.filter { !left.contains($0) }
        XCTAssertEqual(Array(backlog.prefix(evicted.count)), evicted, "the oldest went")
        XCTAssertGreaterThanOrEqual(try database.recordQueue.records(stream: .location).count, locationBefore, "location stays")
        XCTAssertEqual(try database.housekeeping.evictedTotals()[.location], 0)
        let status = try AgentCLI(directory: rig.directory.path, configPath: rig.configPath).run(["status", "--json"])
        let report = try StatusReport.decode(Data(status.stdout.utf8))
        XCTAssertEqual(report.database.maxQueueBytes, 2 * StorageLimits.mebibyte)
        XCTAssertEqual(report.streams.first { $0.name == "microphone" }?.evicted, try database.housekeeping.evictedTotals()[.microphone])
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
        let database = try AgentDatabase(path: database)
        let payload = Data("\"\(String(repeating: "a", count: 79_998))\"".utf8)
        return try (0..<120).map { i in
            let record = NewRecord(stream: .microphone, capturedAt: Date().addingTimeInterval(-86_400 + Double(i) * 30),
                                   payload: payload)
            try database.recordQueue.enqueue(record)
            return record.id
        }
    }
}
