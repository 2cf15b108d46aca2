import AgentCore
import Foundation
import TestRigs
import XCTest

/// `ariata-agent run` as the user service (the user unit's environment) with a
/// notification daemon (python-dbusmock's, on a private session bus): each condition's
/// notice appears once per episode with its remedy, a reload repeats none, and an episode
/// that ends and comes back is told again (docs/laptop.md#desktop-notices). As the system
/// service, none unless `[notify] enabled = true`.
final class DesktopNoticesDaemonTests: XCTestCase {
    /// A floor no disk has: the storage guard's E004 from the first pass.
    private static let floorNoDiskHas = "min_free_mb = 1000000"

    func testAsTheUserServiceEachNoticeAppearsOncePerEpisodeWithItsRemedy() throws {
        let session = try DBusRig(.session)
        let server = try DBusMockRig.notificationDaemon(on: session)
        let rig = try DaemonRig(checkInterval: 1, storageConfig: Self.floorNoDiskHas,
                                microphoneConfig: "fallback_device = \"none\"", microphoneDevice: "nosuchmic")
        try rig.receiver.setVerify(["location": ["is_enabled": false]])
        try rig.startAgent(environment: session.environment, unit: DaemonRig.userUnit)
        func summaries() throws -> [String] { try server.notifications().map(\.summary) }

        let storage = "Ariata: the disk is almost full", microphone = "Ariata: the microphone is not recording"
        let location = "Ariata: the server switched location off", token = "Ariata: the server refused this device's token"
        do {
            try waitUntil("the storage, microphone and location notices", timeout: 30) {
                Set(try summaries()).isSuperset(of: [storage, microphone, location])
            }
        } catch {
            throw RigFailure("\(error): only \(try summaries()); the agent's log:\n\(rig.agentLog)")
        }
        // Location is off and the microphone has no device: a health sample to upload.
        try rig.receiver.configure(token: "another-token")
        try rig.appendHeartRates([70])
        try waitUntil("the token notice", timeout: 30) { try summaries().contains(token) }
        Thread.sleep(forTimeInterval: 2) // more checks, every condition still there
        let first = try summaries()
        XCTAssertEqual(first.sorted(), [location, token, microphone, storage].sorted(), "each once")

        let notices = try server.notifications()
        XCTAssertTrue(notices.allSatisfy { $0.appName == "Ariata agent" })
        func body(_ summary: String) -> String { notices.first { $0.summary == summary }?.body ?? "" }
        XCTAssertTrue(body(storage).contains("below the agent's floor of 1000000 MB ([storage] min_free_mb) (E004)"), body(storage))
        XCTAssertTrue(body(storage).contains("Free disk space there"), body(storage))
        XCTAssertTrue(body(microphone).contains("ALSA capture device 'nosuchmic' not found"), body(microphone))
        XCTAssertTrue(body(microphone).contains("No fallback is set: [microphone] fallback_device"), body(microphone))
        XCTAssertTrue(body(location).contains("Switch it on there to record again"), body(location))
        XCTAssertTrue(body(token).contains("run 'ariata-agent onboard --user-service' again"), body(token))

        // The storage episode ends (a floor the disk has) and comes back: told again, and
        // only it; the reloads repeat none of the others, whose conditions lasted.
        let original = try String(contentsOfFile: rig.configPath, encoding: .utf8)
        try original.replacingOccurrences(of: Self.floorNoDiskHas, with: "min_free_mb = 0")
            .write(toFile: rig.configPath, atomically: true, encoding: .utf8)
        rig.agent?.signal(SIGHUP)
        let database = try rig.openDatabase()
        try waitUntil("the floor given back", timeout: 30) {
            try database.agentState.value(AgentStateKey.storageBelowFloorSince) == nil
        }
        Thread.sleep(forTimeInterval: 2.5) // checks that see the disk with room
        try original.write(toFile: rig.configPath, atomically: true, encoding: .utf8)
        rig.agent?.signal(SIGHUP)
        try waitUntil("the storage notice of the second episode", timeout: 30) { try summaries().filter { $0 == storage }.count == 2 }
        Thread.sleep(forTimeInterval: 2)
        let all = try summaries()
        XCTAssertEqual(all.sorted(), [location, token, microphone, storage, storage].sorted())
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        XCTAssertTrue(rig.agentLog.contains("desktop notices on (the user service)"), rig.agentLog)
    }

    func testAsTheSystemServiceNoneUnlessTheFileTurnsThemOn() throws {
        let session = try DBusRig(.session)
        let server = try DBusMockRig.notificationDaemon(on: session)
        let rig = try DaemonRig(checkInterval: 1, storageConfig: Self.floorNoDiskHas)
        try rig.startAgent(environment: session.environment)
        let database = try rig.openDatabase()
        try waitUntil("the storage guard's E004", timeout: 30) {
            try database.agentState.value(AgentStateKey.storageBelowFloorSince) != nil
        }
        Thread.sleep(forTimeInterval: 3)
        XCTAssertEqual(try server.notifications(), [], "the system service has no desktop to show them")
        XCTAssertTrue(rig.agentLog.contains("desktop notices off (the system service)"), rig.agentLog)

        try (String(contentsOfFile: rig.configPath, encoding: .utf8) + "\n[notify]\nenabled = true\n")
            .write(toFile: rig.configPath, atomically: true, encoding: .utf8)
        rig.agent?.signal(SIGHUP)
        try waitUntil("the storage notice", timeout: 30) { try server.notifications().count == 1 }
        XCTAssertEqual(try server.notifications().first?.summary, "Ariata: the disk is almost full")
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
        XCTAssertTrue(rig.agentLog.contains("desktop notices on ([notify] enabled = true)"), rig.agentLog)
    }
}
