import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// `ariata-agent run` with NetworkManager (python-dbusmock's, on a private system bus)
/// saying the connection is metered, then not (docs/laptop.md#metered-networks): with the
/// default `[upload] on_metered = "small"` location and health go while audio waits in
/// the queue, `status` and the metrics say so, and the switch to an unmetered connection
/// sends the audio at once, not at the next interval.
final class MeteredUploadDaemonTests: XCTestCase {
    func testOnAMeteredConnectionAudioWaitsAndGoesWithinSecondsOfAnUnmeteredOne() throws {
        let bus = try DBusRig(.system)
        let networkManager = try DBusMockRig.networkManager(on: bus, metered: 3) // guess-yes: a phone's hotspot
        let interval: TimeInterval = 8
        let rig = try DaemonRig(uploadInterval: Int(interval))
        try rig.startAgent(environment: bus.environment)
        try rig.appendHeartRates([70, 71, 72])
        let database = try rig.openDatabase()

        // Audio queued, and a cycle after that: location and health go, the audio stays.
        var audioQueuedAt = Date.distantFuture
        try waitUntil("a cycle after the first audio chunk was queued", timeout: 40) {
            if audioQueuedAt == .distantFuture, try database.recordQueue.count(stream: .microphone, status: .pending) > 0 {
                audioQueuedAt = Date()
            }
            let cycle = try rig.receiver.requests(stream: .location).map(\.at).max() ?? 0
            let health = try rig.receiver.stats().stored(.health)
            return cycle > audioQueuedAt.timeIntervalSince1970 && health == 3
        }
        let lastCycle = try XCTUnwrap(try rig.receiver.requests(stream: .location).map(\.at).max())
        XCTAssertEqual(try rig.receiver.stats().stored(.microphone), 0, "audio waits on a metered connection")
        XCTAssertGreaterThan(try database.recordQueue.count(stream: .microphone, status: .pending), 0)

        // Right after that cycle, so the next scheduled one is almost a whole interval away.
        let unmeteredAt = Date()
        try networkManager.setMetered(4) // guess-no
        try waitUntil("the audio at the receiver", timeout: 20) { try rig.receiver.stats().stored(.microphone) > 0 }
        let sent = try XCTUnwrap(try rig.receiver.requests(stream: .microphone).map(\.at).min())
        print("measured: audio sent \(String(format: "%.1f", sent - unmeteredAt.timeIntervalSince1970)) s after the switch to unmetered")
        XCTAssertLessThan(sent - unmeteredAt.timeIntervalSince1970, 4, "within seconds of the switch")
        XCTAssertLessThan(sent - lastCycle, interval - 1, "by a cycle of its own, not the interval's next")
        XCTAssertEqual(try database.recordQueue.count(stream: .microphone, status: .failed), 0, "held audio is never dropped")

        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        let log = rig.agentLog
        XCTAssertTrue(log.contains("the connection is metered: microphone uploads wait for an unmetered one ([upload] on_metered = \"small\")"), log)
        XCTAssertTrue(log.contains("the connection is no longer metered: uploading what waited now"), log)
    }

    /// A phone's hotspot NetworkManager guesses unmetered (an iPhone's: `guess-no`, its
    /// device's too), listed by its SSID in `[upload] metered_networks` as a person types
    /// it: audio waits while location and health go, and `status` says which rule decided.
    func testAnSSIDListedAsMeteredHoldsAudioWhileTheOtherStreamsUpload() throws {
        let bus = try DBusRig(.system)
        let networkManager = try DBusMockRig.networkManager(on: bus, metered: 4)
        try networkManager.addWiFi(interface: "wlan0", ssid: "Ana\u{2019}s iPhone", metered: 4)
        let rig = try DaemonRig(uploadInterval: 6, uploadConfig: "metered_networks = [\"Ana's iPhone\"]")
        try rig.startAgent(environment: bus.environment)
        try rig.appendHeartRates([70, 71, 72])
        let database = try rig.openDatabase()

        var audioQueuedAt = Date.distantFuture
        try waitUntil("a cycle after the first audio chunk was queued", timeout: 40) {
            if audioQueuedAt == .distantFuture, try database.recordQueue.count(stream: .microphone, status: .pending) > 0 {
                audioQueuedAt = Date()
            }
            let cycle = try rig.receiver.requests(stream: .location).map(\.at).max() ?? 0
            let health = try rig.receiver.stats().stored(.health)
            return cycle > audioQueuedAt.timeIntervalSince1970 && health == 3
        }
        XCTAssertGreaterThan(try rig.receiver.stats().stored(.location), 0, "location goes")
        XCTAssertEqual(try rig.receiver.stats().stored(.microphone), 0, "audio waits on the listed hotspot")
        XCTAssertGreaterThan(try database.recordQueue.count(stream: .microphone, status: .pending), 0)

        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        let json = try cli.run(["status", "--json"], environment: ["ARIATA_CLOCK_SYNC_FILE": rig.clockSyncFile])
        try StatusSchema.assertMatches(Data(json.stdout.utf8))
        let network = try XCTUnwrap(try StatusReport.decode(Data(json.stdout.utf8)).network, json.stdout)
        XCTAssertEqual(network.metered, true)
        XCTAssertEqual(network.decidedBy, "metered_networks")
        XCTAssertEqual(network.decision, "listed in metered_networks (Ana\u{2019}s iPhone)")
        XCTAssertEqual(network.meteredValue, "guess-no", "what NetworkManager guesses of it")
        XCTAssertEqual(network.ssid, "Ana\u{2019}s iPhone")
        XCTAssertEqual(network.devices, ["wlan0"])
        XCTAssertEqual(network.meteredNetworks, ["Ana's iPhone"])
        XCTAssertEqual(network.deferredStreams, ["microphone"])
        let text = try cli.run(["status"], environment: ["NO_COLOR": "1", "ARIATA_CLOCK_SYNC_FILE": rig.clockSyncFile])
        XCTAssertTrue(text.stdout.contains("network    metered: listed in metered_networks (Ana\u{2019}s iPhone), for "), text.stdout)
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        XCTAssertTrue(rig.agentLog.contains("metered: listed in metered_networks (Ana\u{2019}s iPhone)"), rig.agentLog)
    }

    /// What `status` (text, JSON, metrics) says while audio waits, and that it says once
    /// when NetworkManager is not there at all.
    func testStatusAndTheMetricsShowTheMeteredConnectionAndWhatWaits() throws {
        let bus = try DBusRig(.system)
        var networkManager: DBusMockRig? = try DBusMockRig.networkManager(on: bus, metered: 1)
        let rig = try DaemonRig(uploadInterval: 300)
        try rig.startAgent(environment: bus.environment)
        _ = try rig.openDatabase()
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)

        let json = try cli.run(["status", "--json"], environment: ["ARIATA_CLOCK_SYNC_FILE": rig.clockSyncFile])
        try StatusSchema.assertMatches(Data(json.stdout.utf8))
        let network = try XCTUnwrap(try StatusReport.decode(Data(json.stdout.utf8)).network, json.stdout)
        XCTAssertEqual(network.watchedBy, "NetworkManager")
        XCTAssertEqual(network.metered, true)
        XCTAssertEqual(network.meteredValue, "yes")
        XCTAssertEqual(network.deferredStreams, ["microphone"])
        XCTAssertEqual(network.onMetered, "small")
        XCTAssertEqual(network.decidedBy, "networkmanager", "no device under a default route: NetworkManager's global word")
        XCTAssertEqual(network.decision, "NetworkManager says yes")
        let text = try cli.run(["status"], environment: ["NO_COLOR": "1", "ARIATA_CLOCK_SYNC_FILE": rig.clockSyncFile])
        XCTAssertTrue(text.stdout.contains("network    metered: NetworkManager says yes, for "), text.stdout)
        XCTAssertTrue(text.stdout.contains("microphone waits for an unmetered connection ([upload] on_metered = \"small\")"), text.stdout)
        let metrics = try cli.run(["status", "--prometheus"])
        XCTAssertTrue(metrics.stdout.contains("ariata_agent_network_metered 1\n"), metrics.stdout)
        XCTAssertTrue(metrics.stdout.contains("ariata_agent_upload_held_on_metered{stream=\"microphone\"} 1\n"), metrics.stdout)
        XCTAssertTrue(metrics.stdout.contains("ariata_agent_upload_held_on_metered{stream=\"location\"} 0\n"), metrics.stdout)

        // NetworkManager stops: today's behaviour, said once.
        networkManager = nil
        try waitUntil("status to say metering is unknown", timeout: 15) {
            let json = try cli.run(["status", "--json"], environment: ["ARIATA_CLOCK_SYNC_FILE": rig.clockSyncFile])
            return try StatusReport.decode(Data(json.stdout.utf8)).network?.problem == "NetworkManager left the system bus"
        }
        let after = try cli.run(["status"], environment: ["NO_COLOR": "1", "ARIATA_CLOCK_SYNC_FILE": rig.clockSyncFile])
        XCTAssertTrue(after.stdout.contains("network    metering unknown: NetworkManager left the system bus; uploads go as on any network"),
                      after.stdout)
        XCTAssertNil(networkManager)
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        XCTAssertEqual(rig.agentLog.components(separatedBy: "metering unknown: NetworkManager left the system bus").count - 1, 1,
                       rig.agentLog)
    }
}
