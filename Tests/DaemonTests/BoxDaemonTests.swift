import AgentCore
import Foundation
import TestRigs
import XCTest

/// The real daemon delivering to the reference receiver playing a Virtues box: paired
/// with `onboard --code`, every request over iroh through the bridge, each record once.
/// Inside a network namespace with loopback alone (scripts/test.sh).
final class BoxDaemonTests: XCTestCase {
    private func pairedRig(microphoneDevice: String = DaemonRig.feedDevice, uploadInterval: Int = 5) throws -> DaemonRig {
        try LoopbackOnlyNamespace.requireInside()
        let rig = try DaemonRig(chunkSeconds: 6, overlapSeconds: 1, uploadInterval: uploadInterval, checkInterval: 2,
                                microphoneDevice: microphoneDevice, box: true)
        let onboard = try rig.pairWithBox()
        XCTAssertTrue(onboard.stdout.contains("box over iroh: reached the box"), onboard.stdout)
        return rig
    }

    private func status(_ rig: DaemonRig) throws -> String {
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        return try cli.run(["status"]).stdout
    }

    /// Location, microphone and health, each record stored once; health lines at and past
    /// the older servers' limits (which the box does not check) reach the box only as
    /// those servers would take them; status names the box, its build and the path.
    func testAllThreeStreamsReachTheBoxOnceOverIroh() throws {
        let rig = try pairedRig()
        let start = Date().addingTimeInterval(-600)
        var lines: [String] = []
        for (i, value) in [62, 27, 29, 30, 250, 251, 268, 400, 0, -3].enumerated() {
            lines.append(#"{"timestamp":"\#(RFC3339.string(from: start.addingTimeInterval(Double(i))))","metric_type":"heart_rate","value":\#(value)}"#)
        }
        lines.append(#"{"timestamp":"1970-01-01T00:00:05Z","metric_type":"heart_rate","value":60}"#)
        lines.append(#"{"timestamp":"\#(RFC3339.string(from: Date().addingTimeInterval(3_600)))","metric_type":"heart_rate","value":61}"#)
        lines.append(#"{"timestamp":"\#(RFC3339.string(from: start.addingTimeInterval(20)))","metric_type":"steps","value":-5}"#)
        lines.append(#"{"timestamp":"\#(RFC3339.string(from: start.addingTimeInterval(21)))","metric_type":"steps","value":1200}"#)
        try (lines.joined(separator: "\n") + "\n").write(toFile: rig.healthPath, atomically: false, encoding: .utf8)
        try rig.startAgent()
        try waitUntil("records of all three streams at the box", timeout: 90) {
            let stats = try rig.receiver.stats()
            return stats.stored(.location) >= 3 && stats.stored(.microphone) >= 3 && stats.stored(.health) >= 1
        }
        // A cycle after the queue settled: everything captured so far is delivered.
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        let sync = try AgentCLI(directory: rig.directory.path, configPath: rig.configPath).run(["sync"])
        XCTAssertEqual(sync.status, 0, sync.stdout + sync.stderr)

        let database = try AgentDatabase(readOnlyPath: rig.databasePath)
        for stream in StreamName.allCases {
            let uploaded = Set(try database.recordQueue.records(stream: stream, status: .uploaded).map { $0.id.uuidString.lowercased() })
            XCTAssertEqual(try database.recordQueue.count(stream: stream, status: .pending), 0, "\(stream): nothing left behind")
            let stored = try rig.receiver.storedIDs(stream)
            XCTAssertEqual(Set(stored), uploaded, "\(stream): what the box stored is what the agent marked delivered")
            XCTAssertEqual(stored.count, Set(stored).count, "\(stream): each record once")
            XCTAssertEqual(try rig.receiver.payloadProblems(stream).compactMap { $0 }, [],
                           "\(stream): nothing the older servers would refuse reached the box, which checks nothing")
        }
        let stats = try rig.receiver.stats()
        XCTAssertEqual(stats.duplicates, 0)
        XCTAssertEqual(stats.invalid_records, 0)
        XCTAssertEqual(try rig.receiver.requests().filter { $0.status != 200 }.map(\.statusText), [], "every request answered 200 success")
        for chunk in try rig.receiver.payloads(.microphone) {
            XCTAssertNotNil(chunk["audio_data"] as? String, "speech goes with its audio")
            XCTAssertEqual(chunk["audio_format"] as? String, "ogg")
            XCTAssertTrue(chunk["is_silent"] is Bool, "is_silent as a JSON boolean")
            XCTAssertTrue(chunk["duration_seconds"] is NSNumber)
        }
        let heartRates = try rig.receiver.payloads(.health).filter { $0["metric_type"] as? String == "heart_rate" }
            .compactMap { ($0["value"] as? NSNumber)?.intValue }
        XCTAssertTrue(heartRates.contains(62) && heartRates.contains(27) && heartRates.contains(268),
                      "readings outside 30..250 go as metric_type/value: \(heartRates)")
        XCTAssertFalse(heartRates.contains(400) || heartRates.contains(0) || heartRates.contains(-3), "\(heartRates)")
        let requestsByStream = try rig.receiver.requests()
        XCTAssertTrue(requestsByStream.allSatisfy { $0.encoding == nil }, "never gzip")

        let text = try status(rig)
        XCTAssertTrue(text.contains("Virtues box 0.1.9, build 5e1c0de"), text)
        XCTAssertTrue(text.contains("directly on the LAN"), text)
        XCTAssertTrue(text.contains("none on a Virtues box"), text)
        let json = try AgentCLI(directory: rig.directory.path, configPath: rig.configPath).run(["status", "--json"]).stdout
        try StatusSchema.assertMatches(Data(json.utf8))
        let server = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])?["server"] as? [String: Any])
        XCTAssertEqual(server["generation"] as? String, "box")
        XCTAssertEqual(server["reached_by"] as? String, "direct")
        XCTAssertNotNil(server["answered_at"] as? String)
    }

    /// Digital silence (the null device): each chunk goes as the box's own app sends a
    /// silent one, without audio and `is_silent: true`.
    func testSilentChunksGoWithoutTheirAudio() throws {
        let rig = try pairedRig(microphoneDevice: "null")
        try rig.startAgent()
        try waitUntil("silent chunks at the box", timeout: 60) { try rig.receiver.stats().stored(.microphone) >= 2 }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        for chunk in try rig.receiver.payloads(.microphone) {
            XCTAssertNil(chunk["audio_data"], "no audio for the box to keep or transcribe")
            XCTAssertEqual(chunk["is_silent"] as? Bool, true)
            XCTAssertLessThan((chunk["average_db_level"] as? NSNumber)?.doubleValue ?? 0, -60)
            XCTAssertLessThan((chunk["peak_db_level"] as? NSNumber)?.doubleValue ?? 0, -50)
        }
        XCTAssertEqual(try rig.receiver.stats().box_unread, 0, "the box reads each of them")
    }

    /// Quiet hours from a minute ago to three minutes ahead (UTC, the daemon's TZ here):
    /// the daemon captures no audio, and the span it muted, ended by its stop, reaches the
    /// box as its own app reports one: a recording without audio or level, `is_silent`,
    /// and `muted_by` "schedule" kept in the row's metadata (applets/ios_ingest/microphone.rs).
    func testAMutedSpanReachesTheBoxAsItsAppReportsIt() throws {
        try LoopbackOnlyNamespace.requireInside()
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC") ?? utc.timeZone
        func clock(_ date: Date) -> String {
            let parts = utc.dateComponents([.hour, .minute], from: date)
            return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
        }
        let now = Date()
        let rig = try DaemonRig(chunkSeconds: 6, overlapSeconds: 1, uploadInterval: 5, checkInterval: 2, microphoneConfig: """
            [[microphone.quiet]]
            from = "\(clock(now.addingTimeInterval(-60)))"
            to = "\(clock(now.addingTimeInterval(180)))"
            """, box: true)
        try rig.pairWithBox()
        try rig.startAgent(environment: ["TZ": "UTC"])
        try waitUntil("the microphone muted", timeout: 30) { rig.agentLog.contains("microphone muted") }
        Thread.sleep(forTimeInterval: 3)
        let stopped = Date()
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        let sync = try AgentCLI(directory: rig.directory.path, configPath: rig.configPath).run(["sync"])
        XCTAssertEqual(sync.status, 0, sync.stdout + sync.stderr)

        let payloads = try rig.receiver.payloads(.microphone)
        XCTAssertEqual(payloads.count, 1, "the span alone: no audio was captured: \(payloads)")
        let span = try XCTUnwrap(payloads.first)
        XCTAssertEqual(span["muted_by"] as? String, "schedule")
        XCTAssertEqual(span["is_silent"] as? Bool, true)
        XCTAssertNil(span["audio_data"])
        XCTAssertNil(span["average_db_level"])
        XCTAssertNil(span["peak_db_level"])
        let start = try XCTUnwrap(RFC3339.date(from: span["timestamp_start"] as? String ?? ""))
        let end = try XCTUnwrap(RFC3339.date(from: span["timestamp_end"] as? String ?? ""))
        XCTAssertEqual(end.timeIntervalSince(stopped), 0, accuracy: 2, "the span ends when the daemon stopped")
        XCTAssertEqual((span["duration_seconds"] as? NSNumber)?.doubleValue ?? 0, end.timeIntervalSince(start), accuracy: 0.01)

        let rows = try rig.receiver.boxRecordings()
        XCTAssertEqual(rows.count, 1)
        let row = try XCTUnwrap(rows.first)
        XCTAssertNil(row.audio_url, "stored without audio")
        XCTAssertTrue(row.is_silent)
        XCTAssertNil(row.average_db_level)
        XCTAssertEqual(row.metadata.muted_by, "schedule", "the box keeps why in the row's metadata")
        XCTAssertEqual(try rig.receiver.payloadProblems(.microphone).compactMap { $0 }, [],
                       "nothing an older server would refuse in its shape")
    }

    /// 409 skipped is sent again; a 404 after the box moved the applet asks for the new one
    /// and goes there; a box that forgot the device is a status error that says to pair
    /// again, and nothing is dropped until it is paired again.
    func testTheBoxsAnswersSkippedMovedAndForgotten() throws {
        let rig = try pairedRig()
        try rig.receiver.addBoxFaults(["skipped,times=2"])
        try rig.startAgent()
        try waitUntil("records after two skipped batches", timeout: 90) { try rig.receiver.stats().stored(.location) >= 2 }
        XCTAssertEqual(try rig.receiver.requests().filter { $0.status == 409 }.count, 2)

        let moved = try rig.receiver.rotateApplet()
        let before = try rig.receiver.stats().stored(.location)
        try waitUntil("records at the moved applet", timeout: 60) { try rig.receiver.stats().stored(.location) > before + 1 }
        XCTAssertGreaterThanOrEqual(try rig.receiver.boxActivity().applet_ids_calls.count, 2, "it asked for the current applet")
        XCTAssertTrue(rig.agentLog.contains("moved this device's ingest applet to \(moved.new)"), rig.agentLog)

        try rig.receiver.forgetBoxDevice(deviceID: try XCTUnwrap(try rig.receiver.boxDevices().first?.deviceID), closeConnections: true)
        do {
            try waitUntil("status says to pair again", timeout: 60) { try self.status(rig).contains("pair again") }
        } catch {
            XCTFail("\(error): \(try status(rig))\n\(rig.agentLog.suffix(3_000))")
            throw error
        }
        let database = try rig.openDatabase()
        let pending = try database.recordQueue.count(stream: .location, status: .pending)
        Thread.sleep(forTimeInterval: 4)
        XCTAssertGreaterThanOrEqual(try database.recordQueue.count(stream: .location, status: .pending), pending, "nothing dropped")
        XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .failed), 0)
        XCTAssertFalse(try rig.receiver.boxActivity().refused_connections.isEmpty, "the box closed its connection: not allowlisted")

        // Paired again (the same key), and a reload: the backlog goes.
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        try rig.pairWithBox()
        try rig.startAgent()
        do {
            try waitUntil("the backlog at the box", timeout: 90) {
                try database.recordQueue.count(stream: .location, status: .pending) == 0 && (try rig.receiver.stats().stored(.location)) > before + 2
            }
        } catch {
            XCTFail("\(error): \(try status(rig))\n\(rig.agentLog.suffix(4_000))")
            throw error
        }
        XCTAssertEqual(try rig.receiver.stats().duplicates, 0)
    }

    /// SIGKILLs while all three streams capture and upload, then the box away and back:
    /// no health sample or fix is lost or stored twice.
    func testKillsAndABoxAwayLoseNothingAndSendNothingTwice() throws {
        let rig = try pairedRig()
        let samples = HeartRateFeed(rig)
        try rig.startAgent()
        for _ in 0..<6 {
            try samples.feed(Double.random(in: 3...7))
            rig.agent?.signal(SIGKILL)
            _ = rig.agent?.wait(timeout: 10)
            try rig.startAgent()
        }
        // The box away for most of a minute (its port and key kept; the breaker opens),
        // capture going on, then back.
        rig.receiver.stop()
        try samples.feed(45)
        try rig.receiver.start()
        try samples.feed(3)
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        let sync = try AgentCLI(directory: rig.directory.path, configPath: rig.configPath).run(["sync"])
        XCTAssertEqual(sync.status, 0, sync.stdout + sync.stderr)

        let stored = try rig.receiver.payloads(.health).compactMap { $0["timestamp"] as? String }
        XCTAssertEqual(stored.count, samples.fed, "every sample fed reached the box")
        XCTAssertEqual(Set(stored).count, stored.count, "none twice")
        let fixes = try rig.receiver.storedIDs(.location)
        XCTAssertEqual(Set(fixes).count, fixes.count)
        // A kill between the box's answer and the queue's mark sends that batch again: the
        // box keeps each record once by id (the receiver counts such copies as duplicates).
        let database = try AgentDatabase(readOnlyPath: rig.databasePath)
        for stream in StreamName.allCases {
            XCTAssertEqual(try database.recordQueue.count(stream: stream, status: .pending), 0, "\(stream)")
        }
    }

    /// The queue's disk filled by another program while the box is away and a backlog of
    /// audio waits: capture goes on, each new record taking the place of the oldest audio
    /// of the backlog as the storage guard says (docs/storage.md), no fix or sample goes,
    /// and once the disk has room and the box is back, everything left reaches it once.
    func testAFullDiskLosesNoFixOrSampleAndSendsNothingTwice() throws {
        try LoopbackOnlyNamespace.requireInside()
        let fs: SmallFilesystem
        do {
            fs = try SmallFilesystem.make(.tmpfs, megabytes: 40)
        } catch let error as CannotMount {
            throw XCTSkip(error.description)
        }
        let databasePath = fs.file("agent.sqlite")
        let backlog = try (0..<120).map { i in
            try TestRecords.realistic(.microphone, at: Date().addingTimeInterval(-86_400 + Double(i) * 30), audioBytes: 80_000)
        }
        try AgentDatabase(path: databasePath).recordQueue.enqueue(backlog, anchor: nil)
        let rig = try DaemonRig(chunkSeconds: 6, overlapSeconds: 1, uploadInterval: 5, checkInterval: 2,
                                databasePath: databasePath, storageConfig: "min_free_mb = 4\nmax_queue_mb = 100", box: true)
        try rig.pairWithBox()
        rig.receiver.stop()   // the box is away: the backlog stays
        let samples = HeartRateFeed(rig)
        try rig.startAgent()
        defer { _ = rig.stopAgent() }
        let database = try rig.openDatabase()
        let reserve = StorageReserve(databasePath: databasePath, size: StorageLimits.defaultReserveBytes)
        try waitUntil("the daemon's reserve file and a location record", timeout: 60) {
            try reserve.isInPlace && database.recordQueue.records(stream: .location).count >= 1
        }
        try samples.feed(3)
        try fs.fillWithAnotherProgram()
        try samples.feed(20)
        XCTAssertEqual(unlink(fs.file("filler")), 0)
        try rig.receiver.start()
        try samples.feed(5)
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        let sync = try AgentCLI(directory: rig.directory.path, configPath: rig.configPath).run(["sync"], timeout: 240)
        XCTAssertEqual(sync.status, 0, sync.stdout + sync.stderr)

        let stored = try rig.receiver.payloads(.health).compactMap { $0["timestamp"] as? String }
        XCTAssertEqual(stored.count, samples.fed, "every sample fed reached the box")
        XCTAssertEqual(Set(stored).count, stored.count, "none twice")
        let fixes = try rig.receiver.storedIDs(.location)
        XCTAssertEqual(Set(fixes).count, fixes.count)
        let evicted = try database.housekeeping.evictedTotals()
        XCTAssertEqual(evicted[.location] ?? 0, 0, "no fix went")
        XCTAssertEqual(evicted[.health] ?? 0, 0, "no sample went")
        let chunks = Set(try rig.receiver.storedIDs(.microphone))
        let backlogLeft = backlog.filter { chunks.contains($0.id.uuidString.lowercased()) }.count
        XCTAssertEqual(backlogLeft + Int(evicted[.microphone] ?? 0), backlog.count, "each backlog chunk either reached the box or made room")
        for stream in StreamName.allCases {
            XCTAssertEqual(try database.recordQueue.count(stream: stream, status: .pending), 0, "\(stream)")
        }
        XCTAssertEqual(try rig.receiver.stats().duplicates, 0, rig.agentLog)
    }
}

/// Heart rates appended to the rig's health file, one every 0.25 s, each a second after
/// the one before from half an hour ago: each sample's time names it.
private final class HeartRateFeed {
    private let rig: DaemonRig
    private let base = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 1_800).rounded())
    private(set) var fed = 0

    init(_ rig: DaemonRig) {
        self.rig = rig
    }

    func feed(_ seconds: Double) throws {
        let until = Date().addingTimeInterval(seconds)
        while Date() < until {
            try rig.appendHeartRates([60 + fed % 50], at: base.addingTimeInterval(Double(fed)))
            fed += 1
            Thread.sleep(forTimeInterval: 0.25)
        }
    }
}
