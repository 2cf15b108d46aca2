import AgentCore
import Foundation
import Platform
import Reports
import TestRigs
import XCTest

/// `ariata-agent run` on a board whose clock is wrong when it starts: libfaketime sets the
/// daemon's wall clock (and only that: CLOCK_BOOTTIME stays true, as it is on a real board)
/// and the clock-sync test hook says "unsynchronised"; then, while it runs, the clock is
/// set right and the hook says "synchronised", as when NTP answers. Every audio chunk and
/// every health sample without a time of its own must reach the receiver with the time it
/// was really captured, and none may be lost.
final class ClockTrustTests: XCTestCase {
    func testAClockIn1970LosesNothingAndSendsTheTrueTimes() throws {
        try runWithAWrongClockThatIsSetWhileRunning(fakeTime: "@1970-01-01 00:10:00") { provisional, real in
            XCTAssertLessThan(provisional, CaptureTimeRule.earliest, "held with the 1970 time it was captured with")
        }
    }

    func testAClockDaysBehindLosesNothingAndSendsTheTrueTimes() throws {
        // What fake-hwclock restores after a long power-off: plausible, and three days behind.
        try runWithAWrongClockThatIsSetWhileRunning(fakeTime: "-3d") { provisional, real in
            XCTAssertEqual(real.timeIntervalSince(provisional), 3 * 86_400, accuracy: 120,
                           "held with the time of the clock three days behind")
        }
    }

    /// libfaketime's preload library (Debian's `libfaketime` package).
    static func libfaketime() throws -> String {
        let root = "/usr/lib"
        let machines = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        for machine in machines.sorted() {
            let candidate = "\(root)/\(machine)/faketime/libfaketimeMT.so.1"
            if FileManager.default.fileExists(atPath: candidate) { return candidate }
        }
        throw RigFailure("libfaketime is not installed: run scripts/install-deps.sh (apt-get install faketime libfaketime)")
    }

    /// The first process libfaketime is loaded into creates the clock it shares with its
    /// children and says so with setenv(FAKETIME_SHARED), which moves `environ`; Swift on
    /// Linux finds argv by walking back from `environ`, so a Swift program started first
    /// under libfaketime sees no arguments (it printed its help). A shell that execs the
    /// agent is that first process instead.
    static let faketimeLauncher = ["/bin/sh", "-c", "exec \"$0\" \"$@\""]

    /// libfaketime's shared clock is named by the pid that made it (the shell, which
    /// became the agent) and is not removed when the agent exits.
    static func removeFaketimeSharedMemory(pid: Int32?) {
        guard let pid else { return }
        try? FileManager.default.removeItem(atPath: "/dev/shm/faketime_shm_\(pid)")
        try? FileManager.default.removeItem(atPath: "/dev/shm/sem.faketime_sem_\(pid)")
    }

    /// The rig's queue, or a failure that says what the agent said (it may have exited).
    func openDatabase(_ rig: DaemonRig) throws -> AgentDatabase {
        do {
            return try rig.openDatabase()
        } catch {
            XCTFail("\(error); the agent said: \(rig.agentLog) \(rig.agent?.stdout() ?? "")")
            throw error
        }
    }

    /// A chunk the receiver stored, timed inside the run: from `start` (early by up to the
    /// fraction of a second between a fix and its arrival, and a chunk's length) to `end`.
    func assertDelivered(_ chunk: QueuedRecord, received: Set<String>, between start: Date, and end: Date,
                         file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertTrue(received.contains(chunk.id.uuidString.lowercased()), "chunk \(chunk.seq) at the receiver", file: file, line: line)
        let times = try Self.chunkTimes(chunk)
        XCTAssertGreaterThanOrEqual(times.start, start.addingTimeInterval(-6), "chunk \(chunk.seq)", file: file, line: line)
        XCTAssertLessThanOrEqual(times.end, end.addingTimeInterval(1), "chunk \(chunk.seq)", file: file, line: line)
    }

    /// Starts the rig's agent with its wall clock at `fakeTime` and the sync hook saying
    /// "unsynchronised"; returns the file that sets libfaketime's clock.
    func startUnderFaketime(_ rig: DaemonRig, fakeTime: String) throws -> String {
        try rig.setClockSynchronised(false)
        let fakeFile = rig.directory.file("faketime")
        try "\(fakeTime)\n".write(toFile: fakeFile, atomically: true, encoding: .utf8)
        try rig.startAgent(environment: [
            "LD_PRELOAD": try Self.libfaketime(),
            // Read the offset from the file on every call, so the test can set the clock.
            "FAKETIME_TIMESTAMP_FILE": fakeFile, "FAKETIME_NO_CACHE": "1",
            // CLOCK_MONOTONIC and CLOCK_BOOTTIME stay the kernel's, as on a board without RTC.
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        ], launcher: Self.faketimeLauncher)
        return fakeFile
    }

    /// A board with a GPS and no network: the clock stays in 1970 and never synchronised,
    /// and gpsd's 3D fixes give the true time instead. Location records carry gpsd's time;
    /// audio is corrected from the fixes and delivered without NTP ever answering.
    func testAGPSFixGivesTheTrueTimeWhenNTPNeverAnswers() throws {
        let rig = try DaemonRig(chunkSeconds: 6, overlapSeconds: 1, uploadInterval: 5, checkInterval: 2)
        let startedAt = Date()
        _ = try startUnderFaketime(rig, fakeTime: "@1970-01-01 00:10:00")
        defer { Self.removeFaketimeSharedMemory(pid: rig.agent?.pid) }
        let database = try openDatabase(rig)
        try waitUntil("audio corrected from gpsd's time and delivered", timeout: 90) {
            try rig.receiver.stats().stored(.microphone) >= 2 && rig.receiver.stats().stored(.location) >= 2
        }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        let stoppedAt = Date()
        XCTAssertTrue(rig.agentLog.contains("true time from gpsd 3D fix"), rig.agentLog)
        for line in rig.agentLog.split(separator: "\n") where line.contains("corrected the times of") { print("agent: \(line)") }
        let received = Set(try rig.receiver.storedIDs(.microphone))
        let sent = try database.recordQueue.records(stream: .microphone).filter { received.contains($0.id.uuidString.lowercased()) }
        XCTAssertGreaterThanOrEqual(sent.count, 2)
        for chunk in sent {
            let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: chunk.payload) as? [String: Any])
            let start = try XCTUnwrap((fields["timestamp_start"] as? String).flatMap(RFC3339.date(from:)))
            let end = try XCTUnwrap((fields["timestamp_end"] as? String).flatMap(RFC3339.date(from:)))
            // gpsd reports a fix a fraction of a second after its time: corrected times may
            // be that much early.
            XCTAssertGreaterThanOrEqual(start, startedAt.addingTimeInterval(-6), "chunk \(chunk.seq)")
            XCTAssertLessThanOrEqual(end, stoppedAt.addingTimeInterval(1), "chunk \(chunk.seq)")
        }
    }

    /// The times of a chunk's payload.
    static func chunkTimes(_ record: QueuedRecord) throws -> (start: Date, end: Date) {
        let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: record.payload) as? [String: Any])
        let start = try XCTUnwrap((fields["timestamp_start"] as? String).flatMap(RFC3339.date(from:)))
        let end = try XCTUnwrap((fields["timestamp_end"] as? String).flatMap(RFC3339.date(from:)))
        return (start, end)
    }

    /// `systemctl stop` then `ariata-agent sync` on a board with a GPS and no NTP: the last
    /// chunks, written as the daemon stops, are held like the others, and corrected from the
    /// fix before it exits; sync (a process that never saw a fix, its clock still not
    /// synchronised) sends every record, none held. Health lines dated in the future of the
    /// fix's true time are refused when read, counted, and never sent.
    func testAfterAStopWithoutNTPSyncDeliversEveryRecordAndFutureLinesAreRefusedAtCapture() throws {
        // No scheduled upload: what reaches the receiver is what sync sends.
        let rig = try DaemonRig(chunkSeconds: 6, overlapSeconds: 1, uploadInterval: 3_600, checkInterval: 2)
        let startedAt = Date()
        _ = try startUnderFaketime(rig, fakeTime: "@1970-01-01 00:10:00")
        defer { Self.removeFaketimeSharedMemory(pid: rig.agent?.pid) }
        let database = try openDatabase(rig)
        let bootID = try XCTUnwrap(BootClock.bootID)
        try waitUntil("the fix's true time kept in the database", timeout: 60) {
            try database.agentState.storedTimeEvidence(bootID: bootID)?.source == "gpsd 3D fix"
        }
        // Two lines the server would refuse (an hour and a day ahead), two it takes.
        try rig.appendHeartRates([181], at: Date().addingTimeInterval(3_600))
        try rig.appendHeartRates([182], at: Date().addingTimeInterval(86_400))
        try rig.appendHeartRates([71, 72], at: Date().addingTimeInterval(-30))
        let refusedKey = StreamCounter.key(StreamName.health.rawValue, StreamCounter.refusedSamples)
        try waitUntil("the future lines refused and counted, and chunks written", timeout: 60) {
            try database.agentState.value(refusedKey) == "2" && database.recordQueue.records(stream: .health).count == 2
                && database.recordQueue.records(stream: .microphone).count >= 2
        }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        let stoppedAt = Date()
        XCTAssertTrue(rig.agentLog.contains("true time") && rig.agentLog.contains("ahead of"),
                      "the refusals are in the log: \(rig.agentLog)")
        XCTAssertEqual(try database.recordQueue.heldCounts(currentBootID: bootID).total, 0,
                       "the daemon corrected what its streams wrote as it stopped")

        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        let sync = try cli.run(["sync"], environment: ["ARIATA_CLOCK_SYNC_FILE": rig.clockSyncFile], timeout: 120)
        XCTAssertEqual(sync.status, 0, sync.stdout + sync.stderr)

        let final = try AgentDatabase(readOnlyPath: rig.databasePath)
        XCTAssertEqual(try final.recordQueue.heldCounts(currentBootID: bootID).total, 0, "none held")
        for stream in [StreamName.microphone, .location, .health] {
            let records = try final.recordQueue.records(stream: stream)
            let received = Set(try rig.receiver.storedIDs(stream))
            XCTAssertFalse(records.isEmpty, "\(stream)")
            for record in records {
                XCTAssertEqual(record.status, .uploaded, "\(stream) record \(record.seq)")
                XCTAssertTrue(received.contains(record.id.uuidString.lowercased()), "\(stream) record \(record.seq) at the receiver")
            }
        }
        let values = try final.recordQueue.records(stream: .health).compactMap {
            (try JSONSerialization.jsonObject(with: $0.payload) as? [String: Any])?["value"] as? Int
        }
        XCTAssertEqual(values.sorted(), [71, 72], "the future lines were never queued")
        XCTAssertEqual(try rig.receiver.stats().stored(.health), 2)
        XCTAssertEqual(try final.agentState.value(refusedKey), "2")
        for chunk in try final.recordQueue.records(stream: .microphone) {
            let times = try Self.chunkTimes(chunk)
            // Early by the fraction of a second between a fix and its arrival.
            XCTAssertGreaterThanOrEqual(times.start, startedAt.addingTimeInterval(-6), "chunk \(chunk.seq)")
            XCTAssertLessThanOrEqual(times.end, stoppedAt.addingTimeInterval(1), "chunk \(chunk.seq)")
        }
    }

    /// The daemon killed (no clean stop) with chunks held and no NTP: `sync`, which never
    /// saw a fix, corrects them from the fix the daemon kept in the database and sends them.
    func testSyncCorrectsWhatAKilledDaemonHeldFromTheFixItKept() throws {
        // One maintenance round at 5 s (when the fix is kept), the next a minute later: the
        // chunks written meanwhile stay held.
        let rig = try DaemonRig(chunkSeconds: 6, overlapSeconds: 1, uploadInterval: 3_600, checkInterval: 60)
        let startedAt = Date()
        _ = try startUnderFaketime(rig, fakeTime: "@1970-01-01 00:10:00")
        defer { Self.removeFaketimeSharedMemory(pid: rig.agent?.pid) }
        let database = try openDatabase(rig)
        let bootID = try XCTUnwrap(BootClock.bootID)
        try waitUntil("the fix kept and chunks held", timeout: 60) {
            try database.agentState.storedTimeEvidence(bootID: bootID) != nil
                && (database.recordQueue.heldCounts(currentBootID: bootID).byStream[.microphone] ?? 0) >= 2
        }
        rig.agent?.signal(SIGKILL)
        _ = rig.agent?.wait(timeout: 10)
        let killedAt = Date()
        let held = try database.recordQueue.heldRecords(bootID: bootID, limit: 1_000)
        XCTAssertGreaterThanOrEqual(held.count, 1, "the killed daemon left held records")
        XCTAssertTrue(held.allSatisfy { $0.capturedAt < CaptureTimeRule.earliest }, "held with their 1970 times")

        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        // status, read-only, says where this boot's true time is known from.
        let status = try cli.run(["status", "--json"], environment: ["ARIATA_CLOCK_SYNC_FILE": rig.clockSyncFile])
        let clock = try XCTUnwrap(try StatusReport.decode(Data(status.stdout.utf8)).clock, status.stdout)
        XCTAssertEqual(clock.trueTimeFrom, "gpsd 3D fix")
        XCTAssertEqual(clock.heldRecords, held.count)

        let sync = try cli.run(["sync"], environment: ["ARIATA_CLOCK_SYNC_FILE": rig.clockSyncFile], timeout: 120)
        XCTAssertEqual(sync.status, 0, sync.stdout + sync.stderr)
        XCTAssertTrue(sync.stdout.contains("corrected the times of \(held.count) held records (true time from gpsd 3D fix)"), sync.stdout)

        let final = try AgentDatabase(readOnlyPath: rig.databasePath)
        XCTAssertEqual(try final.recordQueue.heldCounts(currentBootID: bootID).total, 0)
        let received = Set(try rig.receiver.storedIDs(.microphone))
        for record in held {
            let chunk = try XCTUnwrap(try final.recordQueue.records(stream: .microphone).first { $0.seq == record.seq })
            XCTAssertEqual(chunk.status, .uploaded, "chunk \(chunk.seq)")
            try assertDelivered(chunk, received: received, between: startedAt, and: killedAt)
        }
    }

    /// A restart in the same boot with gpsd gone (no fix, no NTP): the new daemon takes the
    /// fix the last one kept in the database and corrects and sends what it captures.
    func testTheNextStartOfTheSameBootCorrectsFromTheFixTheLastOneKept() throws {
        let rig = try DaemonRig(chunkSeconds: 6, overlapSeconds: 1, uploadInterval: 5, checkInterval: 2)
        _ = try startUnderFaketime(rig, fakeTime: "@1970-01-01 00:10:00")
        let database = try openDatabase(rig)
        let bootID = try XCTUnwrap(BootClock.bootID)
        try waitUntil("the fix's true time kept in the database", timeout: 60) {
            try database.agentState.storedTimeEvidence(bootID: bootID)?.source == "gpsd 3D fix"
        }
        let firstPID = rig.agent?.pid
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        Self.removeFaketimeSharedMemory(pid: firstPID)
        rig.feeder.stop()
        rig.gps.killGPSD()
        let lastBefore = try database.recordQueue.records(stream: .microphone).map(\.seq).max() ?? 0

        let restartedAt = Date()
        _ = try startUnderFaketime(rig, fakeTime: "@1970-01-01 00:10:00")
        defer { Self.removeFaketimeSharedMemory(pid: rig.agent?.pid) }
        try waitUntil("chunks of the second run corrected and delivered", timeout: 90) {
            try database.recordQueue.records(stream: .microphone, status: .uploaded).filter { $0.seq > lastBefore }.count >= 2
        }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        let stoppedAt = Date()
        XCTAssertTrue(rig.agentLog.contains("true time of this boot from gpsd 3D fix, kept in the database"), rig.agentLog)
        XCTAssertEqual(try database.recordQueue.heldCounts(currentBootID: bootID).total, 0)
        let received = Set(try rig.receiver.storedIDs(.microphone))
        let second = try database.recordQueue.records(stream: .microphone).filter { $0.seq > lastBefore && $0.status == .uploaded }
        for chunk in second {
            try assertDelivered(chunk, received: received, between: restartedAt, and: stoppedAt)
        }
    }

    struct Sample {
        var value: Int
        var writtenAt: Date
    }

    func runWithAWrongClockThatIsSetWhileRunning(fakeTime: String, checkProvisional: (Date, Date) -> Void) throws {
        // No location: a 3D fix is evidence of the true time too (see the GPS test below),
        // and here the clock alone must do it.
        let rig = try DaemonRig(chunkSeconds: 6, overlapSeconds: 1, uploadInterval: 5, checkInterval: 2, locationEnabled: false)
        let fakeFile = try startUnderFaketime(rig, fakeTime: fakeTime)
        let startedAt = Date()
        defer { Self.removeFaketimeSharedMemory(pid: rig.agent?.pid) }
        let database = try openDatabase(rig)

        // Health samples without a time of their own: dated by the daemon when it reads them.
        var samples: [Sample] = []
        func writeSample(_ value: Int) throws {
            guard let handle = FileHandle(forWritingAtPath: rig.healthPath) else { throw RigFailure("cannot open \(rig.healthPath)") }
            handle.seekToEndOfFile()
            handle.write(Data("{\"heart_rate\":\(value)}\n".utf8))
            try handle.close()
            samples.append(Sample(value: value, writtenAt: Date()))
        }
        for value in 70..<75 {
            try writeSample(value)
            Thread.sleep(forTimeInterval: 1)
        }
        try waitUntil("audio and health held while the clock is wrong", timeout: 60) {
            let held = try database.recordQueue.heldCounts(currentBootID: BootClock.bootID)
            return (held.byStream[.microphone] ?? 0) >= 2 && held.byStream[.health] == 5
        }
        XCTAssertEqual(try rig.receiver.stats().stored(.microphone), 0, "nothing held is sent")
        XCTAssertEqual(try rig.receiver.stats().stored(.health), 0, "nothing held is sent")
        let heldChunk = try XCTUnwrap(try database.recordQueue.records(stream: .microphone).first)
        checkProvisional(heldChunk.capturedAt, Date())
        let bootID = try XCTUnwrap(BootClock.bootID)
        let heldAtFirst = Set(try database.recordQueue.heldRecords(bootID: bootID, limit: 1_000).map(\.seq))

        // status warns while records are held, with their count.
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        let status = try cli.run(["status", "--json"], environment: ["ARIATA_CLOCK_SYNC_FILE": rig.clockSyncFile])
        let report = try StatusReport.decode(Data(status.stdout.utf8))
        let clock = try XCTUnwrap(report.clock, status.stdout)
        XCTAssertFalse(clock.synchronised)
        XCTAssertGreaterThanOrEqual(clock.heldRecords, 7)
        XCTAssertTrue(report.warnings.contains { $0.contains("clock not synchronised") && $0.contains("records are held") },
                      "\(report.warnings)")
        XCTAssertEqual(status.status, 1, "warnings make status exit 1")

        // NTP answers: the clock is set right and the kernel says so.
        try "+0\n".write(toFile: fakeFile, atomically: true, encoding: .utf8)
        try rig.setClockSynchronised(true)
        for value in 75..<78 {
            try writeSample(value)
            Thread.sleep(forTimeInterval: 1)
        }
        try waitUntil("every held record corrected and delivered", timeout: 90) {
            let held = try database.recordQueue.heldCounts(currentBootID: BootClock.bootID)
            let stats = try rig.receiver.stats()
            let uploaded = try database.recordQueue.records(stream: .microphone, status: .uploaded) + database.recordQueue.records(stream: .health, status: .uploaded)
            return held.total == 0 && stats.stored(.health) == samples.count
                && heldAtFirst.isSubset(of: Set(uploaded.map(\.seq)))
                && uploaded.filter { $0.stream == .microphone }.count >= 4
        }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        let stoppedAt = Date()
        let corrections = rig.agentLog.split(separator: "\n").filter { $0.contains("corrected the times of") }
        XCTAssertFalse(corrections.isEmpty, rig.agentLog)
        for line in corrections { print("agent: \(line)") }
        XCTAssertFalse(rig.agentLog.contains("dropped"), rig.agentLog)
        XCTAssertFalse(rig.agentLog.contains("chunk lost"), rig.agentLog)

        let final = try AgentDatabase(readOnlyPath: rig.databasePath)
        XCTAssertEqual(try final.recordQueue.heldCounts(currentBootID: BootClock.bootID).total, 0)

        // Health: each sample once, delivered, dated within a second or two of when it
        // was written (the daemon reads the file as it grows).
        let health = try final.recordQueue.records(stream: .health)
        let receivedHealth = Set(try rig.receiver.storedIDs(.health))
        XCTAssertEqual(health.count, samples.count)
        var lateness: [Double] = []
        for record in health {
            let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: record.payload) as? [String: Any])
            let value = try XCTUnwrap(fields["value"] as? Int)
            let time = try XCTUnwrap((fields["timestamp"] as? String).flatMap(RFC3339.date(from:)))
            let sample = try XCTUnwrap(samples.first { $0.value == value }, "sample \(value)")
            XCTAssertEqual(record.status, .uploaded, "sample \(value)")
            XCTAssertTrue(receivedHealth.contains(record.id.uuidString.lowercased()), "sample \(value) at the receiver")
            XCTAssertGreaterThanOrEqual(time, sample.writtenAt.addingTimeInterval(-0.5), "sample \(value)")
            XCTAssertLessThanOrEqual(time, sample.writtenAt.addingTimeInterval(2), "sample \(value)")
            lateness.append(time.timeIntervalSince(sample.writtenAt))
        }
        print("health samples dated \(lateness.map { String(format: "%.3f", $0) }.joined(separator: ", ")) s after they were written")
        XCTAssertEqual(health.compactMap { try? JSONSerialization.jsonObject(with: $0.payload) as? [String: Any] }
                        .compactMap { $0["value"] as? Int }.sorted(), samples.map(\.value))

        // Audio: every chunk sent is at the receiver, all lie inside the time the daemon
        // really ran, and one follows the other with its overlap: none missing, none
        // misplaced (a chunk left three days or fifty years off would break the chain).
        let chunks = try final.recordQueue.records(stream: .microphone)
        let receivedAudio = Set(try rig.receiver.storedIDs(.microphone))
        var previousEnd: Date?
        for (index, chunk) in chunks.enumerated() {
            let fields = try XCTUnwrap(JSONSerialization.jsonObject(with: chunk.payload) as? [String: Any])
            let start = try XCTUnwrap((fields["timestamp_start"] as? String).flatMap(RFC3339.date(from:)))
            let end = try XCTUnwrap((fields["timestamp_end"] as? String).flatMap(RFC3339.date(from:)))
            let overlap = try XCTUnwrap(fields["overlap_duration"] as? Double)
            if chunk.status == .uploaded {
                XCTAssertTrue(receivedAudio.contains(chunk.id.uuidString.lowercased()), "chunk \(index) at the receiver")
            } else {
                XCTAssertFalse(heldAtFirst.contains(chunk.seq), "chunk \(index) was held, so it must have been sent")
                XCTAssertGreaterThanOrEqual(index, chunks.count - 2, "only chunks written after the last upload wait")
            }
            XCTAssertGreaterThanOrEqual(start, startedAt.addingTimeInterval(-5), "chunk \(index) starts after the daemon did")
            XCTAssertLessThanOrEqual(end, stoppedAt.addingTimeInterval(1), "chunk \(index) ends before the daemon stopped")
            XCTAssertEqual(chunk.capturedAt.timeIntervalSince1970, start.timeIntervalSince1970, accuracy: 0.001)
            if let previousEnd {
                XCTAssertEqual(start.timeIntervalSince(previousEnd), -overlap, accuracy: 1.5,
                               "chunk \(index) follows chunk \(index - 1)")
            }
            previousEnd = end
        }
        XCTAssertEqual(try final.recordQueue.records(stream: .microphone, status: .failed).count, 0, "the receiver refused nothing")
        XCTAssertEqual(try final.recordQueue.records(stream: .health, status: .failed).count, 0, "the receiver refused nothing")
    }
}
