import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// `ariata-agent run` around a suspend, with logind played by python-dbusmock on a private
/// system bus: the delay lock is held while running; on PrepareForSleep(true) the chunk in
/// progress is in the queue and committed before the lock is released, within logind's
/// 5 s; nothing is captured while asleep; on (false) the lock is taken again, a new chunk
/// starts (none spans the sleep) and an upload cycle runs at once.
final class SleepWakeDaemonTests: XCTestCase {
    private struct Chunk {
        var start: Date
        var end: Date
    }

    private func chunks(_ rig: DaemonRig) throws -> [Chunk] {
        let database = try rig.openDatabase()
        return try database.recordQueue.records(stream: .microphone).compactMap { record in
            guard let object = try JSONSerialization.jsonObject(with: record.payload) as? [String: Any],
                  let start = (object["timestamp_start"] as? String).flatMap(RFC3339.date(from:)),
                  let end = (object["timestamp_end"] as? String).flatMap(RFC3339.date(from:)) else { return nil }
            return Chunk(start: start, end: end)
        }
    }

    private func check(mode: ServiceMode) throws {
        let bus = try DBusRig(.system)
        let logind = try DBusMockRig.logind(on: bus)
        // A long upload interval: a request soon after the wake is the wake's own cycle.
        let rig = try DaemonRig(chunkSeconds: 8, uploadInterval: 600)
        try rig.startAgent(environment: bus.environment.merging([ServiceMode.environmentVariable: mode.rawValue]) { $1 })
        try waitUntil("the agent to hold logind's sleep delay lock", timeout: 30) { try logind.holdsSleepDelay() }
        try waitUntil("the first full chunk", timeout: 40) { try chunks(rig).count >= 1 }
        // Some seconds into the next chunk.
        Thread.sleep(forTimeInterval: 3)
        let before = try chunks(rig).count

        let sleepAt = Date()
        try logind.prepareForSleep(true)
        try waitUntil("the lock to be released", timeout: 10, interval: 0.01) { try !logind.holdsSleepDelay() }
        let released = Date().timeIntervalSince(sleepAt)
        print("sleep: lock released \(String(format: "%.2f", released)) s after PrepareForSleep(true)")
        XCTAssertLessThan(released, 5, "within logind's InhibitDelayMaxSec")
        // Committed before the lock went: read at once, from another connection.
        let atRelease = try chunks(rig)
        XCTAssertEqual(atRelease.count, before + 1, "the chunk in progress is in the queue")
        let partial = try XCTUnwrap(atRelease.last)
        XCTAssertLessThan(partial.end.timeIntervalSince(partial.start), 8, "a partial chunk")
        // The rig's sound card is a FIFO a feeder fills at real-time pace: up to 2 s of
        // audio wait in it, so its times are that loose.
        XCTAssertLessThan(abs(partial.end.timeIntervalSince(sleepAt)), 2.5, "it ends when sleep was announced")

        Thread.sleep(forTimeInterval: 3)
        XCTAssertEqual(try chunks(rig).count, before + 1, "nothing captured while asleep")
        let requestsBefore = try rig.receiver.stats().requests

        let wakeAt = Date()
        try logind.prepareForSleep(false)
        try waitUntil("the lock to be taken again", timeout: 10) { try logind.holdsSleepDelay() }
        try waitUntil("an upload cycle right after the wake", timeout: 10) { try rig.receiver.stats().requests > requestsBefore }
        try waitUntil("a chunk recorded after the wake", timeout: 30) { try chunks(rig).count >= before + 2 }
        let after = try XCTUnwrap(try chunks(rig).last)
        XCTAssertGreaterThanOrEqual(after.start, partial.end, "no overlap carried across the sleep: a new chunk")
        XCTAssertGreaterThanOrEqual(after.start.timeIntervalSince(wakeAt), -2.5, "it starts at the wake")
        for chunk in try chunks(rig) {
            XCTAssertFalse(chunk.start < sleepAt && chunk.end > wakeAt.addingTimeInterval(-2.5),
                           "a chunk spans the sleep: \(chunk)")
        }
        XCTAssertTrue(rig.agentLog.contains("ready for sleep in"), rig.agentLog)
        XCTAssertEqual(rig.stopAgent(), 0)
        XCTAssertFalse(try logind.holdsSleepDelay(), "the lock goes with the agent")
        // The coverage ledger: asleep from the announcement to the wake, then captured, then stopped.
        let spans = try rig.openDatabase().coverage.spans([.microphone], from: sleepAt.addingTimeInterval(-600), to: Date().addingTimeInterval(60))
        XCTAssertEqual(spans.suffix(3).map(\.state), [.asleep, .captured, .stopped], "\(spans)")
        let asleep = try XCTUnwrap(spans.first { $0.state == .asleep })
        XCTAssertLessThan(abs(asleep.start.timeIntervalSince(sleepAt)), 2.5)
        XCTAssertLessThan(abs(try XCTUnwrap(asleep.end).timeIntervalSince(wakeAt)), 2.5)
    }

    func testAsTheSystemServiceTheChunkIsCommittedBeforeSleepAndANewOneStartsOnWake() throws {
        try check(mode: .system)
    }

    func testAsAUserServiceTheSame() throws {
        try check(mode: .user)
    }

    /// The streams' liveness as `status --json` shows it.
    private func liveness(_ rig: DaemonRig) throws -> [String: String] {
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        let json = try cli.run(["status", "--json"], environment: ["ARIATA_CLOCK_SYNC_FILE": rig.clockSyncFile])
        try StatusSchema.assertMatches(Data(json.stdout.utf8))
        let report = try StatusReport.decode(Data(json.stdout.utf8))
        return Dictionary(uniqueKeysWithValues: report.streams.map { ($0.name, $0.liveness) })
    }

    /// Asleep by logind's signal, with the streams shown as asleep; then `resume` (the
    /// rig's logind) ends the sleep without `PrepareForSleep(false)`, and capture must come
    /// back within two maintenance rounds, the lock taken again.
    private func checkResume(_ resume: (DBusMockRig) throws -> Void, said: String) throws {
        let bus = try DBusRig(.system)
        let logind = try DBusMockRig.logind(on: bus)
        let round = 2
        let rig = try DaemonRig(chunkSeconds: 5, uploadInterval: 600, checkInterval: round)
        try rig.startAgent(environment: bus.environment)
        try waitUntil("the agent to hold logind's sleep delay lock", timeout: 30) { try logind.holdsSleepDelay() }
        try waitUntil("the microphone capturing", timeout: 30) { try liveness(rig)["microphone"] == "healthy" }

        try logind.prepareForSleep(true)
        try waitUntil("the lock to be released", timeout: 10) { try !logind.holdsSleepDelay() }
        // Each stream's status is written as its supervisor holds it: wait for them all.
        try waitUntil("status to show every stream held for sleep", timeout: 15) {
            try Set(liveness(rig).values.filter { $0 != "disabled" }) == ["asleep"]
        }
        // Some rounds asleep: logind still prepares for sleep, so capture stays held.
        Thread.sleep(forTimeInterval: Double(2 * round))
        XCTAssertFalse(try logind.holdsSleepDelay(), "still asleep while logind says so")
        let before = try chunks(rig).count

        let resumedAt = Date()
        try resume(logind)
        try waitUntil("the lock taken again without the signal", timeout: Double(5 * round)) { try logind.holdsSleepDelay() }
        let taken = Date().timeIntervalSince(resumedAt)
        print("measured: capture resumed \(String(format: "%.1f", taken)) s after a silent resume, rounds every \(round) s")
        XCTAssertLessThan(taken, Double(2 * round) + 1, "within two maintenance rounds")
        try waitUntil("a chunk recorded after the resume", timeout: 30) { try chunks(rig).count > before }
        try waitUntil("status to show the streams capturing", timeout: 15) { try liveness(rig)["microphone"] == "healthy" }
        XCTAssertEqual(rig.stopAgent(), 0)
        XCTAssertTrue(rig.agentLog.contains(said), rig.agentLog)
    }

    func testAResumeWithoutPrepareForSleepFalseRestartsCaptureWithinTwoRounds() throws {
        try checkResume({ try $0.resumeWithoutSignal() },
                        said: "woke from sleep without logind's signal (logind's PreparingForSleep is false")
    }

    func testLogindRestartingWhileAsleepRestartsCapture() throws {
        try checkResume({ logind in
            logind.stop()
            try logind.start()
        }, said: "woke from sleep without logind's signal (")
    }
}

