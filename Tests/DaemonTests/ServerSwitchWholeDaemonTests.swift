import AgentCore
import Foundation
import Platform
import Reports
import TestRigs
import XCTest

/// The server's stream switches through `ariata-agent run` on the real clock, with every
/// rig: a stream switched off at the receiver does not start again after the next verify
/// (driven by SIGHUP, whose restart of the streams asks first, rather than by the hourly
/// ask), resumes when switched on, and stays off across a restart while the receiver is
/// down.
final class ServerSwitchWholeDaemonTests: XCTestCase {
    func testSwitchedOffAtTheServerStopsCaptureAndARestartWithoutNetworkKeepsIt() throws {
        let rig = try DaemonRig(checkInterval: 30)
        try rig.startAgent()
        let database = try rig.openDatabase()
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        func fixes() throws -> Int { try database.recordQueue.records(stream: .location).count }
        func verifies() throws -> Int { try rig.receiver.verifyCalls().count }
        try waitUntil("location records", timeout: 30) { try fixes() > 0 }
        XCTAssertEqual(try rig.receiver.verifyCalls(), [200], "asked at start")

        // The start's line for a stream the server's answer holds before it captures.
        func heldByTheServer() -> Int { rig.agentLog.components(separatedBy: "location switched off by the server").count - 1 }

        // Switched off in the server's web UI; the reload asks before its streams start,
        // so location does not start again at all.
        try rig.receiver.setVerify(["location": ["is_enabled": false]])
        rig.agent?.signal(SIGHUP)
        try waitUntil("the verify after the reload", timeout: 10) { try verifies() == 2 }
        try waitUntil("location held by the server's answer", timeout: 10) { heldByTheServer() == 1 }
        XCTAssertFalse(rig.agentLog.contains("location paused"), "location started before the answer:\n\(rig.agentLog)")
        // A location interval of 2 s: three fixes would come in 6 s if it still captured,
        // 'resume' (which signals the daemon) included: it cannot undo the server's switch.
        let atStop = try fixes()
        let resume = try cli.run(["resume", "location"])
        XCTAssertEqual(resume.status, 0, resume.stderr)
        XCTAssertTrue(resume.stdout.contains("location stays off: the server switched it off"), resume.stdout)
        Thread.sleep(forTimeInterval: 6)
        XCTAssertEqual(try fixes(), atStop, "no fix while switched off")
        let report = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
        XCTAssertEqual(report.streams.first { $0.name == "location" }?.switchedOffBy, "server")
        XCTAssertTrue(try cli.run(["status"]).stdout.contains("off (server)"))

        // Switched on again: capture resumes.
        try rig.receiver.setVerify(["location": ["is_enabled": true]])
        rig.agent?.signal(SIGHUP)
        try waitUntil("location records again", timeout: 15) { try fixes() > atStop }

        // Off again, then a restart while the receiver is down: still off.
        try rig.receiver.setVerify(["location": ["is_enabled": false]])
        rig.agent?.signal(SIGHUP)
        try waitUntil("the verify", timeout: 10) { try verifies() == 4 }
        try waitUntil("location held again", timeout: 10) { heldByTheServer() == 2 }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        rig.receiver.stop()
        let beforeRestart = try fixes()
        try rig.startAgent()
        try waitUntil("the restarted daemon to keep the switch", timeout: 20) {
            rig.agentLog.contains("location switched off by the server")
        }
        try waitUntil("the failed ask", timeout: 20) { rig.agentLog.contains("cannot read the server's stream switches") }
        Thread.sleep(forTimeInterval: 6)
        XCTAssertEqual(try fixes(), beforeRestart, "no fix after the restart: the last answer holds")
        // An unreachable server is an outage the uploads already report, not a warning of
        // the switches' own: the line says the ask failed, and status does not fail for it.
        let offline = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
        XCTAssertNotNil(offline.serverSwitches?.lastProblem)
        XCTAssertFalse(offline.warnings.contains { $0.contains("stream switches") }, "\(offline.warnings)")
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
    }

    /// Health switched off in an Ariata server's web UI: the verify answer leaves it out.
    /// Samples written to the file after that answer are not captured, and are read from
    /// where capture stopped once it is switched on again.
    func testHealthLeftOutOfTheAnswerIsNotCapturedUntilSwitchedOn() throws {
        let rig = try DaemonRig(checkInterval: 30, locationEnabled: false, microphoneConfig: "enabled = false")
        try rig.startAgent()
        let database = try rig.openDatabase()
        func samples() throws -> Int { try database.recordQueue.records(stream: .health).count }
        try rig.appendHeartRates([61, 62])
        try waitUntil("the first samples", timeout: 20) { try samples() == 2 }

        try rig.receiver.setVerify(["healthkit": ["is_enabled": false]])
        let listed = (try rig.receiver.verifyAnswer()["enabled_streams"] as? [[String: Any]])?.compactMap { $0["stream_name"] as? String }
        XCTAssertEqual(listed, ["location", "microphone"], "the Ariata shape: health is left out, not false")
        rig.agent?.signal(SIGHUP)
        try waitUntil("the verify after the reload", timeout: 10) { try rig.receiver.verifyCalls().count == 2 }
        // The reload's streams start after the answer: health does not start again.
        try waitUntil("health held by the answer", timeout: 10) { rig.agentLog.contains("health switched off by the server") }
        XCTAssertFalse(rig.agentLog.contains("health paused"), "health started before the answer:\n\(rig.agentLog)")
        try rig.appendHeartRates([63, 64, 65])
        Thread.sleep(forTimeInterval: 5)
        XCTAssertEqual(try samples(), 2, "no sample captured while switched off")

        try rig.receiver.setVerify(["healthkit": ["is_enabled": true]])
        rig.agent?.signal(SIGHUP)
        try waitUntil("health to resume", timeout: 20) { try samples() == 5 }
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
    }
}
