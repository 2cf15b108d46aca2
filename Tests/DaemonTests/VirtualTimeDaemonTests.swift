import AgentCore
import Daemon
import Foundation
import Logging
import Platform
import Synchronization
import TestRigs
import Upload
import XCTest

/// The daemon's timed behaviour in process, on a `VirtualScheduler` the test moves
/// (docs/development.md, Driving time in a test): the timed pause's end (across a restart),
/// the commit-sync deadline and the power policy with a real uploader and receiver. Each
/// runs in milliseconds and asserts both sides of a deadline, so a timer that fires late
/// or early fails it. The whole-binary tests (TimedPauseDaemonTests, PowerDaemonTests,
/// DaemonCommitSyncTests) keep checking the same on the real clock.
final class VirtualTimeDaemonTests: XCTestCase {
    /// A capture stream that only counts its starts and stops: these tests are about when
    /// the daemon starts and stops streams, not about what a stream captures.
    final class CountingStream: CaptureStream, Sendable {
        let stream: StreamName
        let counts: Counts
        init(_ stream: StreamName, counts: Counts) {
            self.stream = stream
            self.counts = counts
        }
        func start() { counts.add(stream, started: true) }
        func stop() { counts.add(stream, started: false) }
        func liveness() -> Liveness { .healthy }
    }

    final class Counts: Sendable {
        private let value = Mutex<[StreamName: (starts: Int, stops: Int)]>([:])
        func add(_ stream: StreamName, started: Bool) {
            value.withLock { v in
                var c = v[stream] ?? (0, 0)
                if started { c.starts += 1 } else { c.stops += 1 }
                v[stream] = c
            }
        }
        func starts(_ stream: StreamName) -> Int { value.withLock { $0[stream]?.starts ?? 0 } }
        func stops(_ stream: StreamName) -> Int { value.withLock { $0[stream]?.stops ?? 0 } }
        /// Started and not stopped since.
        func running(_ stream: StreamName) -> Bool { starts(stream) > stops(stream) }
    }

    /// Counting streams, and the real uploader on the virtual scheduler (or an idle one).
    struct VirtualComponents: ComponentFactory {
        let counts: Counts
        let scheduler: VirtualScheduler
        var uploads = false

        func makeStream(_ stream: StreamName, config: AgentConfig, database: AgentDatabase, logger: Logger) -> any CaptureStream {
            CountingStream(stream, counts: counts)
        }

        func makeUploader(config: AgentConfig, database: AgentDatabase, logger: Logger) -> any UploadComponent {
            guard uploads else { return DaemonCommitSyncTests.IdleUploader() }
            return Uploader(server: config.server, upload: config.upload, queue: database.recordQueue, clock: scheduler,
                            logger: logger, scheduler: scheduler)
        }
    }

    /// A queue, a configuration with only `streams` enabled, and the scheduler both read.
    struct Rig {
        let directory: TemporaryDirectory
        let scheduler: VirtualScheduler
        let counts = Counts()
        var config: AgentConfig
        let database: AgentDatabase

        init(_ name: String, streams: Set<StreamName>, toml: String = "") throws {
            directory = try TemporaryDirectory(name)
            // Real time to start from: the receiver checks record times against its clock.
            scheduler = VirtualScheduler(wallClock: Date())
            config = try AgentConfig(toml: toml, file: directory.file("agent.toml"))
            for stream in StreamName.allCases { config.setEnabled(stream, streams.contains(stream)) }
            config.storage.database = directory.file("agent.sqlite")
            database = try AgentDatabase(path: config.storage.database, syncWindow: TimeInterval(config.storage.syncSeconds),
                                    clock: scheduler, syncClock: scheduler.monotonicSeconds)
        }

        func daemon(uploads: Bool = false, roundInterval: TimeInterval = 30) -> AgentDaemon {
            AgentDaemon(config: config, database: database,
                        factory: VirtualComponents(counts: counts, scheduler: scheduler, uploads: uploads),
                        clock: scheduler, scheduler: scheduler, roundInterval: roundInterval, trimsMemory: false,
                        logger: Logger(label: "test"))
        }

        /// A fix as the location stream writes it, stamped now on the virtual clock.
        func fix() throws -> NewRecord { try TestRecords.realistic(.location, at: scheduler.now()) }
    }

    // MARK: The timed pause

    func testATimedPauseEndsByItselfAtItsEndAlsoAfterARestart() throws {
        let rig = try Rig("virtual-pause", streams: [.location])
        let switches = PauseSwitches(database: rig.database)
        let daemon = rig.daemon()
        daemon.start()
        XCTAssertTrue(rig.counts.running(.location))

        // `pause location --for 20s`, then the daemon told (as `pause` does).
        try switches.pause([.location], until: rig.scheduler.now().addingTimeInterval(20), at: rig.scheduler.now())
        daemon.applyPauseSwitches()
        XCTAssertFalse(rig.counts.running(.location), "paused")
        // The maintenance round runs at 5 s and 35 s: resuming at 20 s is the pause-end timer's doing.
        rig.scheduler.advance(by: 19.9)
        XCTAssertFalse(rig.counts.running(.location), "not resumed before the end")
        rig.scheduler.advance(by: 0.2)
        XCTAssertTrue(rig.counts.running(.location), "resumed at the end, not at the next maintenance round")
        XCTAssertEqual(try switches.pausedStreams(at: rig.scheduler.now()), [])
        XCTAssertNil(try rig.database.agentState.value("paused.location"), "the ended pause is cleared")

        // A 10-minute pause, the daemon stopped 100 s in and a new one started: it reads the
        // stored pause, keeps the stream paused, and ends it at its time.
        let end = rig.scheduler.now().addingTimeInterval(600)
        try switches.pause([.location], until: end, at: rig.scheduler.now())
        daemon.applyPauseSwitches()
        XCTAssertFalse(rig.counts.running(.location))
        rig.scheduler.advance(by: 100)
        daemon.stop()
        let starts = rig.counts.starts(.location)
        let restarted = rig.daemon()
        restarted.start()
        XCTAssertEqual(rig.counts.starts(.location), starts, "the restarted daemon keeps the pause")
        rig.scheduler.advance(by: end.timeIntervalSince(rig.scheduler.now()) - 0.1)
        XCTAssertFalse(rig.counts.running(.location), "not resumed before the end")
        XCTAssertEqual(restarted.runMaintenanceRound()["location"], .disabled, "a paused stream reads as disabled")
        rig.scheduler.advance(by: 0.2)
        XCTAssertTrue(rig.counts.running(.location), "resumed at the end by the new daemon's timer")
        XCTAssertEqual(restarted.runMaintenanceRound()["location"], .healthy)
        restarted.stop()
    }

    // MARK: The supervisor

    /// The supervisor stores an unchanged liveness again every ten checks (300 s at the
    /// default interval) on the scheduler's monotonic clock, so `status` can tell a live
    /// daemon's check from a stale one; between those, a quiet daemon writes nothing.
    func testAnUnchangedLivenessIsStoredAgainEveryTenChecksOnTheSchedulersClock() throws {
        let rig = try Rig("virtual-liveness", streams: [.location])
        let daemon = rig.daemon()
        daemon.start()
        defer { daemon.stop() }
        let started = rig.scheduler.now()
        func checked() throws -> Date? { try rig.database.agentState.storedLiveness().first { $0.component == "location" }?.checkedAt }

        rig.scheduler.advance(by: 5)   // the first check
        XCTAssertEqual(try XCTUnwrap(checked()).timeIntervalSince(started), 5, accuracy: 0.01)
        rig.scheduler.advance(by: 270) // nine more, nothing changed
        XCTAssertEqual(try XCTUnwrap(checked()).timeIntervalSince(started), 5, accuracy: 0.01, "not rewritten within 300 s")
        rig.scheduler.advance(by: 30)  // the tenth after the first: 300 s on
        XCTAssertEqual(try XCTUnwrap(checked()).timeIntervalSince(started), 305, accuracy: 0.01, "rewritten 300 s after")
    }

    // MARK: The commit-sync deadline

    func testTheCheckArmsADeadlineThatSyncsAtTheEndOfTheWindow() throws {
        let rig = try Rig("virtual-commit-sync", streams: [], toml: "[storage]\nsync_seconds = 2\n")
        let daemon = rig.daemon()
        daemon.start()
        // Checks at 5 s, then every 30 s. A fix at 34 s waits 1 s by the check at 35 s,
        // which arms a deadline for 36 s, well before the next check at 65 s.
        rig.scheduler.advance(by: 34)
        try rig.database.recordQueue.enqueue(rig.fix())
        XCTAssertTrue(rig.database.commitSync.isWaiting)
        rig.scheduler.advance(by: 1.0)
        XCTAssertTrue(rig.database.commitSync.isWaiting, "2 s window: the check leaves a fix 1 s old to its deadline")
        rig.scheduler.advance(by: 0.9)
        XCTAssertTrue(rig.database.commitSync.isWaiting, "not synced before the end of its window")
        rig.scheduler.advance(by: 0.2)
        XCTAssertFalse(rig.database.commitSync.isWaiting, "synced at the end of its window, with no other commit or check")

        // A 45 s window: the first check after the fix (29 s old then, 16 s left, less than
        // a check's interval) arms the deadline for 45 s after the fix, before the next check.
        var config = rig.config
        config.storage.syncSeconds = 45
        daemon.reload(config)
        XCTAssertEqual(rig.database.commitSync.window, 45)
        // The reload restarted the checks: at 5 s, 35 s, 65 s from now.
        rig.scheduler.advance(by: 6)
        try rig.database.recordQueue.enqueue(rig.fix())
        rig.scheduler.advance(by: 44.9)
        XCTAssertTrue(rig.database.commitSync.isWaiting, "not synced before the end of its 45 s window")
        rig.scheduler.advance(by: 0.2)
        XCTAssertFalse(rig.database.commitSync.isWaiting, "synced at the end of its 45 s window, between checks")

        try rig.database.recordQueue.enqueue(rig.fix())
        daemon.stop()
        XCTAssertFalse(rig.database.commitSync.isWaiting, "a clean stop leaves nothing waiting")
        XCTAssertEqual(try rig.database.recordQueue.count(stream: .location, status: .pending), 3)
    }

    // MARK: The power policy

    func testThePowerPolicyFollowsTheSupply() throws {
        let directory = try TemporaryDirectory("virtual-power-sysfs")
        let sysfs = directory.file("power_supply")
        func set(ac online: Bool, battery: Int) throws {
            try FakePowerSupply(path: sysfs).laptop(onMains: online, battery: battery)
        }
        try set(ac: true, battery: 90)
        var rig = try Rig("virtual-power", streams: [.microphone], toml: """
            [upload]
            interval = 5
            [power]
            sysfs_path = "\(sysfs)"
            battery_upload_factor = 6
            low_battery_percent = 20
            """)
        let receiver = try ReceiverRig(logDirectory: rig.directory.path)
        rig.config.server.endpoint = receiver.endpoint
        rig.config.server.token = Secret("test-token")
        rig.config.server.deviceID = "test-device"
        let database = rig.database, scheduler = rig.scheduler
        func power() throws -> StoredPowerState? {
            try database.agentState.value(AgentStateKey.powerState).map { try JSONDecoder().decode(StoredPowerState.self, from: Data($0.utf8)) }
        }
        func pending() throws -> Int { try database.recordQueue.count(stream: .location, status: .pending) }
        func uploaded() throws -> Int { try database.recordQueue.count(stream: .location, status: .uploaded) }

        // Checks every second, uploads every 5 s on mains.
        let daemon = rig.daemon(uploads: true, roundInterval: 1)
        daemon.start()
        scheduler.advance(by: 1)
        XCTAssertEqual(try power()?.source, "mains")
        XCTAssertEqual(try power()?.effects, [])
        XCTAssertTrue(rig.counts.running(.microphone))
        try database.recordQueue.enqueue(rig.fix())
        scheduler.advance(by: 5)
        XCTAssertEqual(try pending(), 0, "uploaded within the 5 s interval on mains")

        // On battery: the next upload 30 s after the check that saw the battery, not before.
        try set(ac: false, battery: 70)
        scheduler.advance(by: 1)
        XCTAssertEqual(try power()?.source, "battery")
        XCTAssertEqual(try power()?.batteryPercent, 70)
        XCTAssertEqual(try power()?.effects, ["uploads every 30 s instead of 5 s (on battery)"])
        try database.recordQueue.enqueue(rig.fix())
        scheduler.advance(by: 28)
        XCTAssertEqual(try pending(), 1, "no upload 28 s into a 30 s interval")
        scheduler.advance(by: 2.5)
        XCTAssertEqual(try pending(), 0, "uploaded at the end of the 30 s interval")

        // Low battery: the microphone pauses, uploads wait for mains.
        try set(ac: false, battery: 10)
        scheduler.advance(by: 1)
        XCTAssertFalse(rig.counts.running(.microphone), "the microphone paused for the battery")
        func ledger() throws -> CoverageState? {
            try database.coverage.spans([.microphone], from: Date(timeIntervalSince1970: 0), to: scheduler.now().addingTimeInterval(1)).last?.state
        }
        XCTAssertEqual(try ledger(), .lowBattery, "the coverage ledger says why")
        XCTAssertEqual(try power()?.effects, ["microphone paused (battery 10 %, below 20 %)", "uploads wait for mains (battery 10 %, below 20 %)"])
        try database.recordQueue.enqueue(rig.fix())
        let requests = try receiver.stats().requests
        let micStarts = rig.counts.starts(.microphone)
        scheduler.advance(by: 120)
        XCTAssertEqual(try receiver.stats().requests, requests, "no upload on a low battery")
        XCTAssertEqual(try pending(), 1, "the fix waits")
        XCTAssertEqual(rig.counts.starts(.microphone), micStarts, "no audio on a low battery")

        // Back on mains: at the next check the microphone resumes and the waiting fix goes at once.
        try set(ac: true, battery: 11)
        scheduler.advance(by: 1)
        XCTAssertEqual(try ledger(), .captured)
        XCTAssertEqual(try power()?.source, "mains")
        XCTAssertEqual(try power()?.effects, [])
        XCTAssertTrue(rig.counts.running(.microphone), "the microphone resumed on mains")
        XCTAssertEqual(try pending(), 0, "the waiting fix went at once")
        XCTAssertEqual(try uploaded(), 3, "every fix delivered, none refused")
        XCTAssertEqual(try receiver.stats().stored(.location), 3)
        daemon.stop()
    }
}
