import AgentCore
@testable import Capture
import DBus
import Platform
import Foundation
import TestRigs
import XCTest

/// The Bluetooth LE source against python-dbusmock's bluez5 on a private system bus: a
/// mock heart-rate sensor whose notifications, disconnections and battery the test drives.
final class HealthBLESourceTests: XCTestCase {
    func stream(_ bed: HealthTestBed, bus: DBusRig, heartRateSeconds: Int = 1, hrvSeconds: Int = 3,
                source: BLESourceSettings = BLESourceSettings(address: "A0:9E:1A:12:34:56", name: "chest")) -> HealthStream {
        var config = HealthConfig()
        config.enabled = true
        config.commitInterval = 1
        config.bleHeartRateSeconds = heartRateSeconds
        config.hrvWindowSeconds = hrvSeconds
        config.sources = [.ble(source)]
        var tuning = BLETuning()
        tuning.bus = .address(bus.address)
        tuning.commitDelay = 0.2
        tuning.scanSeconds = 3
        tuning.connectTimeout = 5
        // Retried every second or so: these tests are about the session, not the backoff
        // of a strap away for long (StrapTroubleTests).
        tuning.reconnect = Backoff(base: 1, cap: 5)
        return HealthStream(config: config, queue: bed.database.recordQueue,
                            clockTrust: ClockTrust(sync: KernelClockSync(), trustSystemClock: true), bleTuning: tuning,
                            logger: HealthTestBed.logger)
    }

    /// Makes sure the next `room` seconds lie inside one window of the `seconds` grid (on
    /// the monotonic clock), sleeping past the next line if they would not, so the
    /// notifications sent now fall into one window.
    static func alignToGrid(_ seconds: Double, room: Double) {
        let left = seconds - Monotonic.now.truncatingRemainder(dividingBy: seconds)
        if left < room { Thread.sleep(forTimeInterval: left + 0.05) }
    }

    func records(_ bed: HealthTestBed, _ metric: String) throws -> [[String: Any]] {
        try bed.payloads().filter { $0["metric_type"] as? String == metric }
    }

    func testHeartRatesOfEveryShapeAndTheContactBit() throws {
        let bed = try HealthTestBed()
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus)
        let stream = stream(bed, bus: bus)
        stream.start()
        defer { stream.stop() }
        try waitUntil("notifications on") { try sensor.isNotifying() }
        // bluetoothd's mock says Notifying before the stream has read StartNotify's reply:
        // on a loaded machine the stream is healthy a moment later.
        try waitUntil("the strap's source healthy") { stream.liveness().isHealthy }

        // One window: an 8-bit rate, a 16-bit one with energy, one with RR intervals and
        // contact: (60 + 62 + 65) / 3 = 62.3 → 62.
        Self.alignToGrid(1, room: 0.6)
        try sensor.notify(HeartRateMeasurement(heartRate: 60).bytes())
        try sensor.notify(HeartRateMeasurement(heartRate: 62, energyExpended: 310).bytes(wide: true))
        try sensor.notify(HeartRateMeasurement(heartRate: 65, contact: .detected, energyExpended: 311, rrIntervals: [940, 950]).bytes())
        try waitUntil("the first window's heart rate") { try records(bed, "heart_rate").count == 1 }
        // A window of readings without skin contact: nothing.
        try sensor.notify(HeartRateMeasurement(heartRate: 140, contact: .notDetected).bytes())
        try sensor.notify(HeartRateMeasurement(heartRate: 150, contact: .notDetected).bytes())
        Thread.sleep(forTimeInterval: 1.5)
        // Then contact again, 16-bit: one more window.
        try sensor.notify(HeartRateMeasurement(heartRate: 71, contact: .detected).bytes(wide: true))
        try waitUntil("the third window's heart rate") { try records(bed, "heart_rate").count == 2 }

        let rates = try records(bed, "heart_rate")
        XCTAssertEqual(rates.map { $0["value"] as? Int }, [62, 71])
        XCTAssertEqual(rates.map { $0["heart_rate"] as? Int }, [62, 71], "Ariata's top-level field")
        XCTAssertEqual(rates.first?["unit"] as? String, "bpm")
        let metadata = try XCTUnwrap(rates.first?["metadata"] as? [String: Any])
        XCTAssertEqual(metadata["source"] as? String, "chest")
        XCTAssertEqual(metadata["readings"] as? Int, 3)
        XCTAssertEqual(stream.statuses()[0].kindStatus(BLESourceStatus.self)?.noContactReadings, 2)
        XCTAssertEqual(stream.statuses()[0].kindStatus(BLESourceStatus.self)?.battery, 84)
    }

    func testVariabilityOfTheRecordedSequence() throws {
        let bed = try HealthTestBed()
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus)
        let stream = stream(bed, bus: bus, heartRateSeconds: 60, hrvSeconds: 3)
        stream.start()
        defer { stream.stop() }
        try waitUntil("notifications on") { try sensor.isNotifying() }
        // The recorded sequence of HRVStatisticsTests, two intervals a notification (a
        // sensor sends what beat since its last one), faster than real time: the figures
        // depend on the intervals, not on when they came.
        let recorded = HRVStatisticsTests.recorded
        Self.alignToGrid(3, room: 1.5)
        for start in stride(from: 0, to: recorded.count, by: 2) {
            try sensor.notify(HeartRateMeasurement(heartRate: 60, contact: .detected,
                                                   rrIntervals: Array(recorded[start..<min(recorded.count, start + 2)])).bytes())
        }
        try waitUntil("the variability sample", timeout: 10) { try records(bed, "heart_rate_variability").count == 1 }
        let hrv = try XCTUnwrap(records(bed, "heart_rate_variability").first)
        XCTAssertEqual(hrv["value"] as? Double, 17.8, "SDNN worked out by hand: 17.825 ms")
        XCTAssertEqual(hrv["hrv"] as? Double, 17.8, "Ariata's top-level field")
        XCTAssertEqual(hrv["unit"] as? String, "ms")
        let metadata = try XCTUnwrap(hrv["metadata"] as? [String: Any])
        XCTAssertEqual(metadata["rmssd_ms"] as? Double, 24.7, "RMSSD worked out by hand: 24.665 ms")
        XCTAssertEqual(metadata["beats"] as? Int, 16)
        XCTAssertEqual(metadata["rejected_beats"] as? Int, 4)
    }

    /// Out of range and back, then bluetoothd restarting: a clear status each time, the
    /// sensor taken up again by itself, nothing twice. Away 3 s, or
    /// `ARIATA_BLE_AWAY_SECONDS` (120 for the figure in docs/performance.md).
    func testTheSensorGoingAwayAndBlueZRestarting() throws {
        let away = ProcessInfo.processInfo.environment["ARIATA_BLE_AWAY_SECONDS"].flatMap(Double.init) ?? 3
        let bed = try HealthTestBed()
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus)
        let stream = stream(bed, bus: bus)
        stream.start()
        defer { stream.stop() }
        try waitUntil("notifications on") { try sensor.isNotifying() }
        try sensor.notify(HeartRateMeasurement(heartRate: 58, contact: .detected).bytes())
        try waitUntil("a heart rate") { try records(bed, "heart_rate").count == 1 }

        try sensor.goAway()
        try waitUntil("the source to say the sensor went") { stream.liveness().reason?.contains("disconnected") == true }
        Thread.sleep(forTimeInterval: away)
        XCTAssertNotNil(stream.statuses()[0].kindStatus(BLESourceStatus.self)?.disconnectedSince)
        XCTAssertTrue(stream.liveness().reason?.contains("cannot connect") == true, "\(stream.liveness())")
        let back = Date()
        try sensor.comeBack()
        try waitUntil("the sensor taken up again", timeout: 10) { try sensor.isNotifying() && stream.liveness().isHealthy }
        print(String(format: "measured: the sensor away %.0f s was taken up again %.2f s after its return", away, Date().timeIntervalSince(back)))
        XCTAssertLessThan(Date().timeIntervalSince(back), 10)
        let gap = try XCTUnwrap(stream.statuses()[0].kindStatus(BLESourceStatus.self)?.lastGap)
        XCTAssertGreaterThanOrEqual(gap.seconds, away)
        XCTAssertNil(stream.statuses()[0].kindStatus(BLESourceStatus.self)?.disconnectedSince)
        try sensor.notify(HeartRateMeasurement(heartRate: 59, contact: .detected).bytes())
        try waitUntil("a heart rate after the return") { try records(bed, "heart_rate").count == 2 }

        sensor.stop()
        try waitUntil("the source to say BlueZ went") { stream.liveness().reason?.contains("BlueZ is not on the system bus") == true }
        try sensor.restart()
        try waitUntil("the sensor taken up after bluetoothd restarted", timeout: 15) { try sensor.isNotifying() && stream.liveness().isHealthy }
        try sensor.setBattery(12)
        try sensor.notify(HeartRateMeasurement(heartRate: 61, contact: .detected).bytes())
        try waitUntil("a heart rate after the restart") { try records(bed, "heart_rate").count == 3 }
        try waitUntil("the battery") { stream.statuses()[0].kindStatus(BLESourceStatus.self)?.battery == 12 }
        stream.stop()

        let rates = try records(bed, "heart_rate")
        XCTAssertEqual(rates.map { $0["value"] as? Int }, [58, 59, 61])
        XCTAssertEqual(Set(rates.compactMap { $0["id"] as? String }).count, 3)
        XCTAssertEqual(stream.statuses()[0].kindStatus(BLESourceStatus.self)?.connections, 3)
        XCTAssertFalse(try sensor.isConnected(), "let go at the stop")
    }

    /// A sensor BlueZ has never seen: found by a discovery filtered on the service.
    func testASensorNotYetKnownIsFoundByADiscovery() throws {
        let bed = try HealthTestBed()
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus, knownToBlueZ: false)
        let stream = stream(bed, bus: bus, source: BLESourceSettings(address: nil, name: "Polar H10 12345678"))
        stream.start()
        defer { stream.stop() }
        try waitUntil("a discovery") { try !sensor.adapterCalls(of: "StartDiscovery").isEmpty }
        let filter = try XCTUnwrap(sensor.adapterCalls(of: "SetDiscoveryFilter").first?.first as? [String: Any])
        XCTAssertEqual((filter["Transport"] as? [String: Any])?["data"] as? String, "le")
        XCTAssertEqual((filter["UUIDs"] as? [String: Any])?["data"] as? [String], [BlueZMockRig.heartRateService])
        try sensor.addSensor()
        try waitUntil("notifications on", timeout: 15) { try sensor.isNotifying() }
        XCTAssertFalse(try sensor.adapterCalls(of: "StopDiscovery").isEmpty, "the discovery is stopped again")
    }

    /// At a stop the open windows are closed by the same rules: the heart rate is
    /// written once, a variability window with too few beats is not (and is counted).
    func testAStopWritesTheOpenWindowsOnce() throws {
        let bed = try HealthTestBed()
        let bus = try DBusRig(.system)
        let sensor = try BlueZMockRig(on: bus)
        let stream = stream(bed, bus: bus, heartRateSeconds: 60, hrvSeconds: 60)
        stream.start()
        try waitUntil("notifications on") { try sensor.isNotifying() }
        Self.alignToGrid(60, room: 3)
        for bpm in [70, 72] {
            try sensor.notify(HeartRateMeasurement(heartRate: bpm, contact: .detected, rrIntervals: [860, 850]).bytes())
        }
        try waitUntil("the notifications read") { stream.statuses()[0].linesRead == 2 }
        stream.stop()
        XCTAssertEqual(try records(bed, "heart_rate").map { $0["value"] as? Int }, [71])
        XCTAssertEqual(try records(bed, "heart_rate_variability").count, 0)
        XCTAssertEqual(stream.statuses()[0].kindStatus(BLESourceStatus.self)?.hrvWindowsDropped, 1)
    }
}
