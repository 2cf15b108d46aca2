import AgentCore
import Foundation
import Platform
import Reports
import TestRigs
import XCTest

final class StatusCommandTests: XCTestCase {
    let server = "endpoint = \"http://127.0.0.1:9\"\ntoken = \"status-test-token\"\ndevice_id = \"dev-1\""

    /// The quiet hours are read in the system's time zone, `TZ` included: the same block is
    /// an hour apart in Europe/Berlin (in winter) and UTC, and each run names its local time.
    func testQuietHoursFollowTheTimeZone() throws {
        let dir = try TemporaryDirectory("status-quiet")
        // An hour from three hours ahead, UTC, written as a local time: not quiet now in
        // either zone (Berlin is an hour or two ahead).
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC") ?? utc.timeZone
        func local(_ date: Date) -> String {
            let parts = utc.dateComponents([.hour, .minute], from: date)
            return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
        }
        let now = Date()
        let cli = try AgentCLI.writeConfig(in: dir.path, extra: """
            [microphone]
            [[microphone.quiet]]
            from = "\(local(now.addingTimeInterval(3 * 3_600)))"
            to = "\(local(now.addingTimeInterval(4 * 3_600)))"
            """)
        func report(_ zone: String) throws -> StatusReport.Stream {
            let json = try cli.run(["status", "--json"], environment: ["TZ": zone])
            try StatusSchema.assertMatches(Data(json.stdout.utf8))
            return try XCTUnwrap(try StatusReport.decode(Data(json.stdout.utf8)).streams.first { $0.name == "microphone" })
        }
        let inUTC = try report("UTC"), inBerlin = try report("Europe/Berlin")
        let berlin = try XCTUnwrap(TimeZone(identifier: "Europe/Berlin"))
        XCTAssertNil(inUTC.mutedBy)
        XCTAssertNil(inBerlin.quietUntil)
        let fromUTC = try XCTUnwrap(inUTC.quietFrom), fromBerlin = try XCTUnwrap(inBerlin.quietFrom)
        XCTAssertEqual(fromUTC.timeIntervalSince(now), 3 * 3_600, accuracy: 61, "three hours ahead in UTC")
        XCTAssertEqual(fromUTC.timeIntervalSince(fromBerlin), Double(berlin.secondsFromGMT(for: fromBerlin)), accuracy: 0.001,
                       "the same local time in Berlin comes its offset sooner")
        let text = try cli.run(["status"], environment: ["TZ": "Europe/Berlin", "NO_COLOR": "1"]).stdout
        XCTAssertTrue(text.contains("microphone: quiet hours from \(LocalClockTime.string(fromBerlin, in: berlin, now: Date()))"), text)
    }

    func testEmptyDatabaseAndNotConfigured() throws {
        let dir = try TemporaryDirectory("status-empty")
        let cli = try AgentCLI.writeConfig(in: dir.path)
        let text = try cli.run(["status"], environment: ["NO_COLOR": "1"])
        XCTAssertEqual(text.status, 1, "a device that is not set up is a warning")
        XCTAssertTrue(text.stdout.contains("not configured"), text.stdout)
        XCTAssertTrue(text.stdout.contains("not created yet"), text.stdout)
        XCTAssertTrue(text.stdout.contains("warning: not set up: run 'ariata-agent onboard'"), text.stdout)
        XCTAssertFalse(text.stdout.contains("\u{1B}["), "no colour when not on a terminal")

        let json = try cli.run(["status", "--json"])
        try StatusSchema.assertMatches(Data(json.stdout.utf8))
        let report = try StatusReport.decode(Data(json.stdout.utf8))
        XCTAssertFalse(report.configured)
        XCTAssertFalse(report.database.exists)
        XCTAssertFalse(report.daemon.running)
        XCTAssertEqual(report.streams.map(\.name), ["location", "microphone", "health"])
        XCTAssertEqual(report.streams.map(\.liveness), ["unknown", "unknown", "disabled"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("agent.sqlite")), "status must not create the database")
    }

    /// The server's identity as the daemon kept it: named on its own line and in JSON; a
    /// login-wall refusal from a Virtues build of 2026-02 or later is named as that build's
    /// problem, not as a token to replace.
    func testTheServerIsNamedAndItsLoginWallToo() throws {
        let dir = try TemporaryDirectory("status-identity")
        let cli = try AgentCLI.writeConfig(in: dir.path, server: server)
        let database = try AgentDatabase(path: dir.file("agent.sqlite"))
        var identity = try ServerIdentity.parse(Data(#"{"status":"healthy","version":"0.4.2","commit":"d561967a3f0e","built_at":"2026-03-10T12:00:00Z","min_ios_version":"1.0"}"#.utf8),
                                                at: Date())
        identity.endpoint = "http://127.0.0.1:9"
        try identity.save(to: database)
        try database.agentState.set(AgentStateKey.uploadAuthPausedUntil, RFC3339.string(from: Date().addingTimeInterval(600)))
        try database.agentState.storeLiveness(component: "uploader", .unhealthy(
            reason: "E002 HTTP 401: \(ServerIdentity.everyDeviceRefused), not just this token", code: .invalidToken))

        let json = try cli.run(["status", "--json"])
        try StatusSchema.assertMatches(Data(json.stdout.utf8))
        let report = try StatusReport.decode(Data(json.stdout.utf8))
        XCTAssertEqual(report.server?.generation, "virtues")
        XCTAssertEqual(report.server?.commit, "d561967a3f0e")
        let wall = try XCTUnwrap(report.warnings.first { $0.contains(ServerIdentity.everyDeviceRefused) }, "\(report.warnings)")
        XCTAssertTrue(wall.contains("the known problem of Virtues 0.4.2, commit d561967, built 2026-03-10T12:00:00Z, a build of its 2026-02 release or later"), wall)
        XCTAssertFalse(report.warnings.contains { $0.contains("with a new token") }, "no new token helps: \(report.warnings)")
        let text = try cli.run(["status"], environment: ["NO_COLOR": "1"])
        XCTAssertTrue(text.stdout.contains("server     Virtues 0.4.2, commit d561967, built 2026-03-10T12:00:00Z"), text.stdout)

        // Another server's identity is not this one's.
        identity.endpoint = "http://127.0.0.1:10"
        try identity.save(to: database)
        XCTAssertNil(try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8)).server)
    }

    func testCountsErrorsPauseAndTheTokenNeverShows() throws {
        let dir = try TemporaryDirectory("status-counts")
        let cli = try AgentCLI.writeConfig(in: dir.path, server: server)
        let clock = ManualClock(Date().addingTimeInterval(-7_200))
        let database = try AgentDatabase(path: dir.file("agent.sqlite"), clock: clock)
        for i in 0..<5 {
            try database.recordQueue.enqueue(NewRecord(stream: .location, capturedAt: clock.now().addingTimeInterval(Double(i)), payload: Data("{}".utf8)))
        }
        try database.recordQueue.enqueue(NewRecord(stream: .microphone, capturedAt: clock.now(), payload: Data(repeating: 65, count: 60_000)))
        let seqs = try database.recordQueue.pendingBatch(stream: .location, maxCount: 2, maxBytes: 1_000).map(\.seq)
        try database.recordQueue.markFailed([seqs[0]], error: "rejected")
        try database.recordQueue.markDelivered([seqs[1]])
        try database.recordQueue.recordUploadResult(stream: .location, success: false, result: "503", code: .serverError, records: 3, bytes: 6)
        try database.agentState.storeLiveness(component: "location", .unhealthy(reason: "cannot reach gpsd at localhost:2947", code: nil))
        try PauseSwitches(database: database).pause([.microphone])

        let json = try cli.run(["status", "--json"])
        try StatusSchema.assertMatches(Data(json.stdout.utf8))
        XCTAssertFalse(json.stdout.contains("status-test-token"))
        let report = try StatusReport.decode(Data(json.stdout.utf8))
        XCTAssertTrue(report.configured)
        XCTAssertEqual(report.deviceId, "dev-1")
        XCTAssertEqual(report.endpoint, "http://127.0.0.1:9/ingest")
        let location = try XCTUnwrap(report.streams.first { $0.name == "location" })
        XCTAssertEqual(location.pending, 3)
        XCTAssertEqual(location.failed, 1)
        XCTAssertEqual(location.uploaded, 1)
        XCTAssertEqual(location.liveness, "unhealthy")
        XCTAssertEqual(try XCTUnwrap(location.oldestPendingAgeSeconds), 7_198, accuracy: 120)
        XCTAssertEqual(location.lastUploadErrorCode, "E003")
        let mic = try XCTUnwrap(report.streams.first { $0.name == "microphone" })
        XCTAssertTrue(mic.paused)
        XCTAssertEqual(mic.liveness, "paused")
        XCTAssertEqual(mic.pendingBytes, 60_000)
        XCTAssertEqual(report.uploader.lastErrorCode, "E003")
        XCTAssertEqual(report.uploader.lastErrorMeaning, "server error (5xx)")
        XCTAssertTrue(report.warnings.contains { $0.contains("nothing uploaded for over an hour") }, "\(report.warnings)")
        XCTAssertTrue(report.warnings.contains { $0.contains("the daemon is not running") }, "\(report.warnings)")

        XCTAssertTrue(report.warnings.contains { $0.contains("start it with 'ariata-agent run --config \(cli.configPath)'") },
                      "a --config user is not sent to systemctl: \(report.warnings)")
        XCTAssertFalse(report.warnings.contains { $0.contains("sudo systemctl start") }, "\(report.warnings)")

        let text = try cli.run(["status"], environment: ["NO_COLOR": "1"])
        XCTAssertEqual(text.status, 3, "set up, daemon not running: 3, like systemctl is-active")
        let locationLine = try XCTUnwrap(text.stdout.split(separator: "\n").first { $0.hasPrefix("location") })
        XCTAssertTrue(locationLine.contains("unhealthy"), String(locationLine))
        XCTAssertTrue(text.stdout.contains("location: cannot reach gpsd at localhost:2947"), text.stdout)
        XCTAssertTrue(text.stdout.contains("last error E003 server error (5xx)"), text.stdout)
        XCTAssertFalse(text.stdout.contains("status-test-token"))
    }

    /// The location stream's fixes kept back (a receiver standing still, fixes over
    /// max_accuracy) in text, JSON and the metrics; and what location is worth while the
    /// daemon says only coarse fixes come.
    func testLocationFixesKeptBackAndOnlyCoarseFixes() throws {
        let dir = try TemporaryDirectory("status-location-kept-back")
        let cli = try AgentCLI.writeConfig(in: dir.path, server: server)
        let database = try AgentDatabase(path: dir.file("agent.sqlite"))
        try database.agentState.set(StreamCounter.key("location", StreamCounter.stationaryThinned), "42")
        try database.agentState.set(StreamCounter.key("location", StreamCounter.tooCoarse), "7")

        let json = try cli.run(["status", "--json"])
        try StatusSchema.assertMatches(Data(json.stdout.utf8))
        var report = try StatusReport.decode(Data(json.stdout.utf8))
        let index = try XCTUnwrap(report.streams.firstIndex { $0.name == "location" })
        XCTAssertEqual(report.streams[index].stationaryThinned, 42)
        XCTAssertEqual(report.streams[index].tooCoarse, 7)
        XCTAssertNil(report.streams[index].lastAccuracy, "the last accuracy is told only while the daemon runs")
        let text = try cli.run(["status"], environment: ["NO_COLOR": "1"])
        XCTAssertTrue(text.stdout.contains("location: 42 fixes not written while the receiver stood still since the daemon started"), text.stdout)
        XCTAssertTrue(text.stdout.contains("location: 7 fixes not written as coarser than max_accuracy since the daemon started"), text.stdout)
        XCTAssertFalse(text.stdout.contains("only coarse fixes"), text.stdout)

        // As the daemon's report has it while GeoClue answers from the IP address only.
        report.streams[index].liveness = "healthy"
        report.streams[index].source = "geoclue"
        report.streams[index].lastAccuracy = 25_000
        report.streams[index].maxAccuracy = 1_000
        try StatusSchema.assertMatches(try report.json())
        let rendered = StatusText(colour: false).render(report)
        XCTAssertTrue(rendered.contains("location: only coarse fixes: the last was 25 km (GeoClue), over max_accuracy 1000 m, so none is written"), rendered)
        let metrics = PrometheusText.render(report)
        XCTAssertTrue(metrics.contains("ariata_agent_location_stationary_thinned_total{stream=\"location\"} 42"), metrics)
        XCTAssertTrue(metrics.contains("ariata_agent_location_too_coarse_total{stream=\"location\"} 7"), metrics)
        XCTAssertTrue(metrics.contains("ariata_agent_location_last_accuracy_metres{stream=\"location\"} 25000"), metrics)

        // Told how the fix was made (GeoClue 2.7), or inferred from its accuracy (2.6).
        report.streams[index].lastMethod = "ip"
        report.streams[index].lastMethodInferred = false
        try StatusSchema.assertMatches(try report.json())
        let told = StatusText(colour: false).render(report)
        XCTAssertTrue(told.contains("location: only an IP-address lookup, 25 km (GeoClue): the Wi-Fi locator knows none of the access points here"), told)
        XCTAssertTrue(told.contains("over max_accuracy 1000 m, so none is written"), told)
        report.streams[index].lastMethodInferred = true
        let inferred = StatusText(colour: false).render(report)
        XCTAssertTrue(inferred.contains("location: only what looks like an IP-address lookup (GeoClue does not say), 25 km (GeoClue)"), inferred)
        report.streams[index].lastMethod = nil
        report.streams[index].lastMethodInferred = nil

        // A fix within the ceiling: nothing to say about its worth; no ceiling: neither.
        report.streams[index].lastAccuracy = 40
        XCTAssertFalse(StatusText(colour: false).render(report).contains("only coarse fixes"))
        report.streams[index].lastAccuracy = 25_000
        report.streams[index].maxAccuracy = 0
        XCTAssertFalse(StatusText(colour: false).render(report).contains("only coarse fixes"))
    }

    func testWorksWhileAWriterIsBusy() throws {
        let dir = try TemporaryDirectory("status-busy")
        let cli = try AgentCLI.writeConfig(in: dir.path, server: server)
        // A real writer process keeps inserting (the same code path the daemon's captures use).
        let writer = try ChildProcess(try BuildProducts.executable("ariata-test-helper"),
                                      ["crash-writer", dir.file("agent.sqlite")], name: "writer", logDirectory: dir.path)
        defer { writer.stop() }
        try waitUntil("the writer to get going") { writer.stdout().count > 37 * 20 }
        var last = 0
        for _ in 0..<5 {
            let result = try cli.run(["status", "--json"])
            XCTAssertNotEqual(result.status, 2, result.stderr)
            let report = try StatusReport.decode(Data(result.stdout.utf8))
            XCTAssertNil(report.database.error)
            let pending = report.streams.reduce(0) { $0 + $1.pending }
            XCTAssertGreaterThanOrEqual(pending, last)
            last = pending
        }
        XCTAssertGreaterThan(last, 0)
        XCTAssertTrue(writer.isRunning, "status must not disturb the writer")
    }

    func testAMillionRecordDatabase() throws {
        let dir = try TemporaryDirectory("status-million")
        let cli = try AgentCLI.writeConfig(in: dir.path, server: server)
        _ = try AgentDatabase(path: dir.file("agent.sqlite"))
        // Fill it in bulk with SQL (the triggers keep the counts, as they do for the daemon),
        // without a journal: a quarter of a gigabyte through the WAL and checkpointed again
        // doubled what the fill wrote; the file is back in WAL mode, as the agent left it.
        let fill = try ChildProcess("/usr/bin/python3", ["-c", """
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1]); now = time.time()
            c.execute('PRAGMA journal_mode = OFF'); c.execute('PRAGMA synchronous = OFF'); c.execute('PRAGMA cache_size = -65536')
            c.execute('''WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000)
              INSERT INTO records (stream, record_id, captured_at, enqueued_at, payload, payload_bytes, status, status_changed_at)
              SELECT CASE i % 3 WHEN 0 THEN 'location' WHEN 1 THEN 'health' ELSE 'microphone' END,
                     randomblob(16), ? - 1000000 + i, ? , zeroblob(200), 200,
                     CASE WHEN i % 10 = 0 THEN 'uploaded' ELSE 'pending' END, ? FROM n''', (now, now, now))
            c.commit()
            assert c.execute('PRAGMA journal_mode = WAL').fetchone()[0] == 'wal'
            """, dir.file("agent.sqlite")], logDirectory: dir.path)
        XCTAssertEqual(fill.wait(timeout: 300), 0, fill.stderr())

        let result = try cli.run(["status", "--json"])
        let report = try StatusReport.decode(Data(result.stdout.utf8))
        XCTAssertEqual(report.streams.reduce(0) { $0 + $1.pending + $1.uploaded }, 1_000_000)
        XCTAssertEqual(report.streams.reduce(0) { $0 + $1.uploaded }, 100_000)
        XCTAssertGreaterThan(report.database.sizeBytes, 200_000_000)
        let location = try XCTUnwrap(report.streams.first { $0.name == "location" })
        XCTAssertGreaterThan(try XCTUnwrap(location.oldestPendingAgeSeconds), 900_000)
    }
}
