import AgentCore
import Foundation
import Platform
import Reports
import TestRigs
import XCTest

/// `ariata-agent run` with a Bluetooth LE source: a Polar-H10-like mock sensor on
/// python-dbusmock's bluez5 (a private system bus) notifying at 1 Hz with an RR interval a
/// notification. At the receiver: one heart rate per 5 s window and one HRV sample per
/// (here 10 s) window, with the values worked out by hand, read by both servers' rules.
final class BLEHeartRateDaemonTests: XCTestCase {
    /// Per second of the 10 s grid: the heart rate notified and the RR interval (1/1024 s).
    /// Second 5's 2050 is a missed beat.
    static let heartRates = [58, 60, 62, 64, 66, 70, 71, 72, 73, 74]
    static let rrIntervals: [UInt16] = [1000, 1040, 990, 1030, 1010, 2050, 980, 1020, 1000, 1040]

    func testHeartRateAndVariabilityReachTheReceiver() throws {
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus, battery: 12)
        let rig = try DaemonRig(locationEnabled: false, microphoneConfig: "enabled = false", healthConfig: """
            ble_heart_rate_seconds = 5
            hrv_window_seconds = 10
            [[health.source]]
            kind = "ble"
            address = "\(sensor.sensorAddress)"
            name = "polar-h10"
            """)
        try rig.startAgent(environment: bus.environment)
        do {
            try waitUntil("the agent to start notifications", timeout: 20) { try sensor.isNotifying() }
        } catch {
            print("agent log:\n\(rig.agentLog)")
            throw error
        }
        // From the next line of the 10 s grid (the agent's windows lie on the monotonic
        // clock's grid), half a second into each second: ten notifications, one window
        // of variability and two of heart rate, whatever the scheduling jitter.
        let left = 10 - Monotonic.now.truncatingRemainder(dividingBy: 10)
        Thread.sleep(forTimeInterval: left + 0.5)
        for second in 0..<10 {
            let due = (Monotonic.now / 10).rounded(.down) * 10 + Double(second) + 0.5
            if due > Monotonic.now { Thread.sleep(forTimeInterval: due - Monotonic.now) }
            let measurement = [UInt8](heartRateMeasurement: Self.heartRates[second], rr: Self.rrIntervals[second])
            try sensor.notify(measurement)
        }
        do {
            try waitUntil("two heart rates and one HRV at the receiver", timeout: 20) {
                let metrics = try rig.receiver.payloads(.health).compactMap { $0["metric_type"] as? String }
                return metrics.filter { $0 == "heart_rate" }.count >= 2 && metrics.contains("heart_rate_variability")
            }
        } catch {
            print("agent log:\n\(rig.agentLog)")
            throw error
        }
        let records = try rig.receiver.payloads(.health)
        let rates = records.filter { $0["metric_type"] as? String == "heart_rate" }
        let hrv = records.filter { $0["metric_type"] as? String == "heart_rate_variability" }
        // (58 + 60 + 62 + 64 + 66) / 5 = 62; (70 + 71 + 72 + 73 + 74) / 5 = 72.
        XCTAssertEqual(rates.map { $0["value"] as? Int }, [62, 72], "Virtues reads metric_type and value")
        XCTAssertEqual(rates.map { $0["heart_rate"] as? Int }, [62, 72], "Ariata reads the top-level heart_rate")
        // By hand, in ticks: the 2050 missed beat out; the other nine sum to 9110, mean
        // 1012.22; Σ(t − mean)² = 3755.56, / 8 = 469.44, √ = 21.667 ticks = 21.159 ms (SDNN).
        // Successive differences without the artefact: 40, −50, 40, −20 | 40, −20, 40:
        // Σd² = 9700, / 7, √ = 37.225 ticks = 36.353 ms (RMSSD).
        XCTAssertEqual(hrv.count, 1)
        XCTAssertEqual(hrv.first?["value"] as? Double, 21.2)
        XCTAssertEqual(hrv.first?["hrv"] as? Double, 21.2, "Ariata reads the top-level hrv")
        let metadata = try XCTUnwrap(hrv.first?["metadata"] as? [String: Any])
        XCTAssertEqual(metadata["rmssd_ms"] as? Double, 36.4)
        XCTAssertEqual(metadata["rejected_beats"] as? Int, 1)
        XCTAssertEqual(metadata["source"] as? String, "polar-h10")
        // Dated when their first beat arrived, 5 s apart.
        let times = rates.compactMap { ($0["timestamp"] as? String).flatMap(RFC3339.date(from:)) }
        XCTAssertEqual(times.count, 2)
        if times.count == 2 { XCTAssertEqual(times[1].timeIntervalSince(times[0]), 5, accuracy: 0.5) }

        let readable = try rig.receiver.readable()
        for generation in ["ariata", "virtues"] {
            let health = readable[generation]?["healthkit"]
            XCTAssertEqual(health?.read, health?.received, generation)
            XCTAssertEqual(health?.received, records.count, generation)
        }
        XCTAssertEqual(try rig.receiver.stats().duplicates, 0)

        // The battery (12 %, below 15) in status, --json and the metrics, with a warning.
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        try waitUntil("status to show the sensor", timeout: 10) {
            let report = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
            return report.streams.first { $0.name == "health" }?.sensors?.first?.battery == 12
        }
        let json = try cli.run(["status", "--json"]).stdout
        try StatusSchema.assertMatches(Data(json.utf8))
        let report = try StatusReport.decode(Data(json.utf8))
        let shown = try XCTUnwrap(report.streams.first { $0.name == "health" }?.sensors?.first)
        XCTAssertEqual(shown.name, "polar-h10")
        XCTAssertTrue(shown.connected)
        XCTAssertTrue(report.warnings.contains { $0.contains("polar-h10: battery at 12 %") }, "\(report.warnings)")
        let text = try cli.run(["status"], environment: ["NO_COLOR": "1"]).stdout
        XCTAssertTrue(text.contains("sensor polar-h10: connected, battery 12 % (low)"), text)
        XCTAssertEqual(shown.state, .connected)
        XCTAssertEqual(shown.address, sensor.sensorAddress)
        // doctor reads the daemon's status for the sensor the daemon holds: no connection
        // of its own, the daemon's notifications go on.
        let connects = try sensor.connectCalls()
        let doctor = try cli.run(["doctor"], environment: bus.environment.merging(["NO_COLOR": "1"]) { $1 })
        XCTAssertTrue(doctor.stdout.contains("health ble \(sensor.sensorAddress): connected to the running daemon"), doctor.stdout)
        XCTAssertEqual(try sensor.connectCalls(), connects, "doctor did not connect")
        XCTAssertTrue(try sensor.isNotifying(), "the daemon's connection is left alone")
        let metrics = try cli.run(["status", "--prometheus"]).stdout
        XCTAssertTrue(metrics.contains(#"ariata_agent_health_sensor_battery_percent{source="polar-h10",stream="health"} 12"#)
                      || metrics.contains(#"ariata_agent_health_sensor_battery_percent{stream="health",source="polar-h10"} 12"#), metrics)
        XCTAssertEqual(rig.stopAgent(), 0)
        XCTAssertFalse(try sensor.isNotifying(), "notifications stopped at the stop")
        XCTAssertTrue(rig.agentLog.contains("battery is at 12 %"), rig.agentLog)
    }
}

extension BLEHeartRateDaemonTests {
    /// A strap that cannot be found beside the rig's file source: the supervisor's rounds
    /// leave the strap to its own retries and never restart the health stream, so the
    /// file's samples all arrive, and status names the strap.
    func testAMissingStrapRestartsNothingAndTheFileKeepsItsPace() throws {
        let bus = try DBusRig(.system)
        let bluez = try BlueZMockRig(on: bus, knownToBlueZ: false)
        defer { bluez.stop() }
        let rig = try DaemonRig(locationEnabled: false, microphoneConfig: "enabled = false", healthConfig: """
            [[health.source]]
            kind = "ble"
            address = "A0:9E:1A:12:34:56"
            name = "strap"
            """)
        try rig.startAgent(environment: bus.environment)
        let cli = AgentCLI(directory: rig.directory.path, configPath: rig.configPath)
        // Four maintenance rounds (2 s each) while the file is written to: a restart of the
        // whole stream would have come at the second.
        var sent = 0
        for round in 0..<4 {
            try rig.appendHeartRates([60 + round, 61 + round], at: Date().addingTimeInterval(Double(-600 + round * 10)))
            sent += 2
            let expected = sent
            do {
                try waitUntil("\(expected) samples at the receiver", timeout: 20) { try rig.receiver.stats().stored(.health) >= expected }
            } catch {
                print("agent log:\n\(rig.agentLog)")
                throw error
            }
            Thread.sleep(forTimeInterval: 2)
        }
        let report = try StatusReport.decode(Data(try cli.run(["status", "--json"]).stdout.utf8))
        let health = try XCTUnwrap(report.streams.first { $0.name == "health" })
        XCTAssertTrue(health.reason?.hasPrefix("strap: ") == true, "\(String(describing: health.reason))")
        XCTAssertEqual(rig.stopAgent(), 0)
        XCTAssertEqual(try rig.receiver.stats().stored(.health), sent)
        let restarts = rig.agentLog.split(separator: "\n").filter { $0.contains("health still") && $0.contains("restarting it") }
        XCTAssertEqual(restarts, [], "the health stream is never restarted whole")
        XCTAssertTrue(rig.agentLog.contains("left strap retrying by itself"), rig.agentLog)
        XCTAssertEqual(rig.agentLog.components(separatedBy: "health stream started with").count - 1, 1,
                       "the stream started once: \(rig.agentLog)")
    }
}

extension [UInt8] {
    /// A Polar H10's notification: contact detected, 8-bit rate, one RR interval.
    init(heartRateMeasurement bpm: Int, rr: UInt16) {
        self = [0x16, UInt8(bpm), UInt8(rr & 0xFF), UInt8(rr >> 8)]
    }
}
