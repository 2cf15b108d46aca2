import AgentCore
import Foundation
import TestRigs
@testable import Upload
import XCTest

/// `POST /api/devices/verify` against the reference receiver playing an Ariata server
/// (switches), a Virtues one (404), a wrong token and a server that is down.
final class StreamSwitchClientTests: XCTestCase {
    private func server(_ receiver: ReceiverRig, token: String = "test-token") -> ServerConfig {
        var server = ServerConfig()
        server.endpoint = receiver.endpoint
        server.token = Secret(token)
        server.deviceID = "test-device"
        server.connectTimeout = 5
        server.requestTimeout = 10
        return server
    }

    func testTheAnswerBecomesSwitchesAndSettings() throws {
        let directory = try TemporaryDirectory("ariata-switches")
        let receiver = try ReceiverRig(logDirectory: directory.path, arguments: [
            "--verify", "microphone=off", "--verify", "location.update_interval_seconds=30",
            "--verify", "healthkit.enabled_metrics=heart_rate,steps"])
        let now = Date()
        guard case .switches(let switches) = StreamSwitchClient(server: server(receiver)).fetch(now: now) else {
            return XCTFail("no switches")
        }
        XCTAssertTrue(switches.supported)
        XCTAssertEqual(switches.fetchedAt, now)
        XCTAssertEqual(switches.switchedOffStreams, [.microphone])
        XCTAssertNil(switches.streams["microphone"], "Ariata lists only the streams switched on")
        XCTAssertTrue(switches.isConfigurationComplete)
        XCTAssertEqual(switches.streams["location"]?.updateIntervalSeconds, 30)
        XCTAssertEqual(switches.streams["health"]?.enabledMetrics, ["heart_rate", "steps"], "healthkit is the agent's health")
        XCTAssertEqual(try receiver.verifyCalls(), [200])

        // What maps onto the agent: the interval where the file leaves it open, the metrics.
        var config = AgentConfig()
        XCTAssertEqual(switches.applied(to: config).location.interval, 30)
        XCTAssertEqual(switches.applied(to: config).health.serverMetrics, ["heart_rate", "steps"])
        config.location.interval = 12
        XCTAssertEqual(switches.applied(to: config).location.interval, 12, "the file's interval wins")
    }

    /// Right after pairing Ariata answers `configuration_complete: false` with no stream:
    /// nothing is captured until the person switches streams on.
    func testNothingSwitchedOnYetIsEveryStreamOff() throws {
        let directory = try TemporaryDirectory("ariata-switches")
        let receiver = try ReceiverRig(logDirectory: directory.path, arguments: [
            "--verify", "location=off", "--verify", "microphone=off", "--verify", "healthkit=off"])
        guard case .switches(let switches) = StreamSwitchClient(server: server(receiver)).fetch(now: Date()) else {
            return XCTFail("no switches")
        }
        XCTAssertFalse(switches.isConfigurationComplete)
        XCTAssertEqual(switches.switchedOffStreams, Set(StreamName.allCases))
        XCTAssertEqual(switches.offReason(.location), ServerSwitches.notConfiguredReason)

        try receiver.setVerify(["healthkit": ["is_enabled": true]])
        guard case .switches(let on) = StreamSwitchClient(server: server(receiver)).fetch(now: Date()) else {
            return XCTFail("no switches")
        }
        XCTAssertTrue(on.isConfigurationComplete)
        XCTAssertEqual(on.switchedOffStreams, [.location, .microphone])
        XCTAssertEqual(on.offReason(.location), ServerSwitches.switchedOffReason)
        XCTAssertNil(on.offReason(.health))
    }

    /// A server may list a stream switched off with `is_enabled: false`: read the same way.
    func testAnExplicitFalseIsReadAsOff() throws {
        let directory = try TemporaryDirectory("ariata-switches")
        let receiver = try ReceiverRig(logDirectory: directory.path, arguments: ["--verify-shape", "explicit", "--verify", "healthkit=off"])
        guard case .switches(let switches) = StreamSwitchClient(server: server(receiver)).fetch(now: Date()) else {
            return XCTFail("no switches")
        }
        XCTAssertEqual(switches.streams["health"], ServerSwitches.Stream(enabled: false), "listed, off")
        XCTAssertEqual(switches.switchedOffStreams, [.health])
    }

    /// Before any answer (a first start without network) the configuration alone decides.
    func testNoAnswerYetSwitchesNothingOff() {
        XCTAssertEqual(ServerSwitches().switchedOffStreams, [])
        XCTAssertTrue(ServerSwitches().isConfigurationComplete)
    }

    func testAnIntervalBelowFiveSecondsIsIgnored() throws {
        let directory = try TemporaryDirectory("ariata-switches")
        let receiver = try ReceiverRig(logDirectory: directory.path, arguments: ["--verify", "location.update_interval_seconds=2"])
        guard case .switches(let switches) = StreamSwitchClient(server: server(receiver)).fetch(now: Date()) else {
            return XCTFail("no switches")
        }
        XCTAssertNil(switches.streams["location"]?.updateIntervalSeconds)
        XCTAssertEqual(switches.applied(to: AgentConfig()).location.interval, 10)
    }

    func testOtherAnswers() throws {
        let directory = try TemporaryDirectory("ariata-switches")
        let receiver = try ReceiverRig(logDirectory: directory.path)
        guard case .unauthorized(let reason) = StreamSwitchClient(server: server(receiver, token: "wrong")).fetch(now: Date()) else {
            return XCTFail("a wrong token is E002")
        }
        XCTAssertTrue(reason.contains("401"), reason)
        XCTAssertFalse(reason.contains("wrong"), "the token is never in a message")

        try receiver.setVerify(status: 404)
        XCTAssertEqual(StreamSwitchClient(server: server(receiver)).fetch(now: Date()), .noSwitches(status: 404))
        try receiver.setVerify(status: 503)
        guard case .failed(_, let code) = StreamSwitchClient(server: server(receiver)).fetch(now: Date()) else {
            return XCTFail("a 503 is a failure")
        }
        XCTAssertEqual(code, .serverError)

        receiver.stop()
        let virtues = try ReceiverRig(logDirectory: directory.path, arguments: ["--generation", "virtues"])
        XCTAssertEqual(StreamSwitchClient(server: server(virtues)).fetch(now: Date()), .noSwitches(status: 404),
                       "Virtues has no switches route")
        try virtues.setLoginWall(true)
        guard case .unauthorized(let walled) = StreamSwitchClient(server: server(virtues)).fetch(now: Date()) else {
            return XCTFail("the 2026-02 login wall is a 401")
        }
        XCTAssertTrue(walled.contains(EveryDeviceRefused.explanation), walled)

        guard case .failed(_, let down) = StreamSwitchClient(server: server(receiver)).fetch(now: Date()) else {
            return XCTFail("a server that is down is a failure")
        }
        XCTAssertEqual(down, .networkTimeout)
    }
}
