import AgentCore
import Foundation
import TestRigs
import XCTest

final class SyncCommandTests: XCTestCase {
    func makeDatabase(_ dir: TemporaryDirectory, location: Int, microphone: Int) throws -> AgentDatabase {
        let database = try AgentDatabase(path: dir.file("agent.sqlite"))
        let now = Date()
        for i in 0..<location {
            try database.recordQueue.enqueue(try NewRecord(stream: .location, capturedAt: now, fields: [
                "timestamp": RFC3339.string(from: now.addingTimeInterval(Double(i) - 1_000)),
                "latitude": 52.5, "longitude": 13.4,
            ]))
        }
        for _ in 0..<microphone {
            try database.recordQueue.enqueue(try NewRecord(stream: .microphone, capturedAt: now, fields: [
                "timestamp_start": RFC3339.string(from: now.addingTimeInterval(-60)),
                "timestamp_end": RFC3339.string(from: now.addingTimeInterval(-30)),
                "duration": 30, "overlap_duration": 2, "audio_format": "ogg", "sample_rate": 16_000,
                "channels": 1, "codec": "opus", "bitrate": 16_000,
                // "OggS" then filler: the receiver checks the container's magic.
                "audio_data": Data("OggS".utf8 + [UInt8](repeating: 7, count: 60_000)).base64EncodedString(),
            ]))
        }
        return database
    }

    /// A running receiver and a config pointing at it, with `upload` as the [upload]
    /// section's keys.
    func startReceiver(_ dir: TemporaryDirectory, upload: String) throws -> (ReceiverRig, AgentCLI) {
        let receiver = try ReceiverRig(logDirectory: dir.path, token: "sync-token")
        try receiver.start()
        let cli = try AgentCLI.writeConfig(in: dir.path, server: """
            endpoint = "\(receiver.endpoint)"
            token = "sync-token"
            device_id = "sync-test"
            """, extra: "[upload]\n\(upload)")
        return (receiver, cli)
    }

    func testSyncDeliversEverythingWithAProgressBarEndingAt100Percent() throws {
        let dir = try TemporaryDirectory("sync")
        let (receiver, cli) = try startReceiver(dir, upload: "batch_max_records = 200\nbatch_max_bytes = 500000")
        defer { receiver.stop() }
        let database = try makeDatabase(dir, location: 1_200, microphone: 30)

        // Under a pseudo-terminal (script(1)) the bar is redrawn in place and ends at 100%.
        let binary = try BuildProducts.executable("ariata-agent")
        let tty = try ChildProcess("script", ["-q", "-e", "-c", "\(binary) sync --config \(cli.configPath)", "/dev/null"],
                                   logDirectory: dir.path)
        XCTAssertEqual(tty.wait(timeout: 120), 0, tty.stdout() + tty.stderr())
        let screen = tty.stdout()
        XCTAssertTrue(screen.contains("\r"), "redrawn in place on a terminal")
        // Every redraw, in order (a bare CR counts as a line break here); the last one of a
        // stream is what stays on the screen.
        let draws = screen.split(whereSeparator: \.isNewline).map(String.init)
        XCTAssertGreaterThan(draws.filter { $0.contains("location") }.count, 3, "the bar moves as batches go")
        let locationLine = try XCTUnwrap(draws.last { $0.contains("location") && $0.contains("[") }, screen)
        XCTAssertTrue(locationLine.contains("100%") && locationLine.contains("1,200/1,200 records"), locationLine)
        let micLine = try XCTUnwrap(draws.last { $0.contains("microphone") && $0.contains("[") }, screen)
        XCTAssertTrue(micLine.contains("100%") && micLine.contains("30/30 records"), micLine)
        XCTAssertTrue(screen.contains("sent 1230 records"), screen)
        XCTAssertTrue(screen.contains("everything pending was delivered"), screen)

        XCTAssertEqual(try receiver.stats().stored(.location), 1_200)
        XCTAssertEqual(try receiver.stats().stored(.microphone), 30)
        XCTAssertEqual(try receiver.stats().duplicates, 0)
        XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .pending), 0)
        XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .uploaded), 1_200)
        XCTAssertGreaterThanOrEqual(try receiver.requests(stream: .location).count, 6, "batches of at most 200")

        // Nothing left: a second sync sends nothing and succeeds.
        let again = try cli.run(["sync"])
        XCTAssertEqual(again.status, 0, again.stdout + again.stderr)
        XCTAssertTrue(again.stdout.contains("sent 0 records"), again.stdout)
    }

    func testSyncFailsWithTheReasonWhenTheServerIsDown() throws {
        let dir = try TemporaryDirectory("sync-down")
        _ = try makeDatabase(dir, location: 10, microphone: 0)
        let cli = try AgentCLI.writeConfig(in: dir.path, server: """
            endpoint = "http://127.0.0.1:\(try FreePort.find())"
            token = "t"
            device_id = "sync-test"
            connect_timeout = 2
            """)
        let result = try cli.run(["sync"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("location: not all sent"), result.stdout)
        XCTAssertEqual(try AgentDatabase(path: dir.file("agent.sqlite")).recordQueue.count(stream: .location, status: .pending), 10,
                       "nothing is dropped")
    }

    func testASecondUploadWaitsForTheLockAndGivesUpClearly() throws {
        let dir = try TemporaryDirectory("sync-lock")
        _ = try makeDatabase(dir, location: 5, microphone: 0)
        let cli = try AgentCLI.writeConfig(in: dir.path, server: """
            endpoint = "http://127.0.0.1:9"
            token = "t"
            device_id = "sync-test"
            """)
        // Another upload (the daemon's) holds the lock.
        let held = try XCTUnwrap(FileLock.upload(databasePath: dir.file("agent.sqlite")).tryAcquire())
        let result = try cli.run(["sync", "--wait", "1"])
        XCTAssertEqual(result.status, 75)
        XCTAssertTrue(result.stdout.contains("an upload is running"), result.stdout)
        XCTAssertTrue(result.stdout.contains("gave up"), result.stdout)
        held.release()
    }

    /// A delivered batch costs the card one fsync: the probe before sending
    /// commits without one, and the records' marks and the stream's stats are one
    /// transaction. Counted with strace on the real command: 6 batches of location records.
    /// It was three per batch (the probe rewrote and fsynced the batch's records; the marks
    /// and the stats were two commits).
    func testADeliveredBatchCostsOneFsync() throws {
        let strace = try ChildProcess.locate("strace")
        let dir = try TemporaryDirectory("sync-fsync")
        let (receiver, cli) = try startReceiver(dir, upload: "batch_max_records = 200")
        defer { receiver.stop() }
        let database = try makeDatabase(dir, location: 1_200, microphone: 0)
        let trace = dir.file("fsyncs.txt")
        let binary = try BuildProducts.executable("ariata-agent")
        let run = try ChildProcess(strace, ["-f", "-qq", "-e", "trace=fsync,fdatasync", "-o", trace,
                                            binary, "sync", "--config", cli.configPath], logDirectory: dir.path)
        XCTAssertEqual(run.wait(timeout: 120), 0, run.stdout() + run.stderr())
        XCTAssertEqual(try database.recordQueue.count(stream: .location, status: .uploaded), 1_200)
        let batches = try receiver.requests(stream: .location).count
        XCTAssertEqual(batches, 6)
        let fsyncs = try String(contentsOfFile: trace, encoding: .utf8)
            .split(separator: "\n").filter { $0.contains("fsync(") || $0.contains("fdatasync(") }.count
        print("measured: sync of \(batches) batches: \(fsyncs) fsyncs")
        XCTAssertGreaterThanOrEqual(fsyncs, batches, "each delivery is fsynced")
        XCTAssertLessThanOrEqual(fsyncs, batches + 3, "one fsync per batch, and a few to open and close the queue")
    }
}
