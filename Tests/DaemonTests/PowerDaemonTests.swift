import AgentCore
import Foundation
import Reports
import TestRigs
import XCTest

/// `[power]` against the real daemon and a fake /sys/class/power_supply tree that the
/// test switches between mains, battery and a low battery.
final class PowerDaemonTests: XCTestCase {
    func testThePowerPolicyFollowsTheSupply() throws {
        let rig = try DaemonRig(chunkSeconds: 5, overlapSeconds: 0, uploadInterval: 5, checkInterval: 1)
        let sysfs = rig.directory.file("power_supply")
        func set(ac online: Bool, battery: Int) throws {
            try FakePowerSupply(path: sysfs).laptop(onMains: online, battery: battery)
        }
        try set(ac: true, battery: 90)
        try (try String(contentsOfFile: rig.configPath, encoding: .utf8)
             + "\n[power]\nsysfs_path = \"\(sysfs)\"\nbattery_upload_factor = 6\nlow_battery_percent = 20\n")
            .write(toFile: rig.configPath, atomically: true, encoding: .utf8)
        try rig.startAgent()
        let database = try rig.openDatabase()
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        func status() throws -> StatusReport { try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8)) }

        try waitUntil("status to show mains", timeout: 20) { try status().power?.source == "mains" }
        XCTAssertEqual(try status().power?.effects, [])
        try waitUntil("a first audio chunk", timeout: 40) { try !database.recordQueue.records(stream: .microphone).isEmpty }

        // On battery: uploads every 30 s instead of 5 s.
        try set(ac: false, battery: 70)
        try waitUntil("status to show the battery", timeout: 20) { try status().power?.source == "battery" }
        let onBattery = try XCTUnwrap(try status().power)
        XCTAssertEqual(onBattery.batteryPercent, 70)
        XCTAssertEqual(onBattery.effects, ["uploads every 30 s instead of 5 s (on battery)"])
        XCTAssertTrue(rig.agentLog.contains("on battery, battery 70 %: uploads every 30 s instead of 5 s"), rig.agentLog)

        // Low battery: the microphone pauses, uploads wait for mains.
        try set(ac: false, battery: 10)
        try waitUntil("the microphone to pause for the battery", timeout: 20) {
            rig.agentLog.contains("microphone paused: capture stopped because the battery is low")
        }
        let low = try status()
        XCTAssertEqual(low.streams.first { $0.name == "microphone" }?.liveness, "paused")
        XCTAssertEqual(low.power?.effects, ["microphone paused (battery 10 %, below 20 %)", "uploads wait for mains (battery 10 %, below 20 %)"])
        let chunks = try database.recordQueue.records(stream: .microphone).count
        let requests = try rig.receiver.stats().requests
        Thread.sleep(forTimeInterval: 12)   // two chunks' and two upload intervals' time
        XCTAssertEqual(try database.recordQueue.records(stream: .microphone).count, chunks, "no audio on a low battery")
        XCTAssertEqual(try rig.receiver.stats().requests, requests, "no upload on a low battery")
        XCTAssertGreaterThan(try database.recordQueue.count(stream: .location, status: .pending), 0, "location goes on and waits")

        // Back on mains: the microphone resumes and the waiting records go at once.
        try set(ac: true, battery: 11)
        try waitUntil("the pending records to go", timeout: 20) { try database.recordQueue.count(stream: .location, status: .pending) == 0 }
        try waitUntil("audio again", timeout: 30) { try database.recordQueue.records(stream: .microphone).count > chunks }
        let back = try status()
        XCTAssertEqual(back.power?.source, "mains")
        XCTAssertEqual(back.power?.effects, [])
        XCTAssertNotEqual(back.streams.first { $0.name == "microphone" }?.liveness, "paused")
        XCTAssertTrue(try cli.run(["status"]).stdout.contains("power      on mains, battery 11 % (Charging)"))
        XCTAssertEqual(rig.stopAgent(), 0, rig.agentLog)
    }
}
