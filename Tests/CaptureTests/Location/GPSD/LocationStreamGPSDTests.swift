import AgentCore
@testable import Capture
import Foundation
import TestRigs
import XCTest

/// The location stream against a real gpsd fed with generated NMEA through a pty pair.
final class LocationStreamGPSDTests: XCTestCase {
    /// Epochs are fed five times faster than real time (gpsd goes by the sentences'
    /// times), so a 60-epoch drive takes 12 s.
    private let feedPeriod: TimeInterval = 0.2

    func testDriveOf60EpochsIsRecordedMatchingTheTrack() throws {
        let rig = try GPSDRig()
        let fixture = try LocationFixture(port: rig.port, interval: 1)
        fixture.stream.start()
        try fixture.waitUntilConnected()

        // Times in the recent past, so every record passes the contract's time rule.
        let drive = NMEADrive.synthetic(epochs: 60, start: Date().addingTimeInterval(-120))
        let feeder = NMEAFeeder(rig: rig, epochs: drive, period: feedPeriod)
        let started = Date()
        feeder.start()
        XCTAssertTrue(feeder.waitUntilDone(timeout: 60), "the feeder did not finish")
        let lastTime = RFC3339.string(from: drive[drive.count - 1].time)
        try waitUntil("the last epoch to be recorded", timeout: 15) {
            try fixture.recordTimestamps().contains(lastTime)
        }
        fixture.stream.stop()
        let elapsed = Date().timeIntervalSince(started)

        let records = try fixture.records()
        print("drive: \(records.count) records in \(elapsed) s; first payload:",
              try fixture.database.recordQueue.records(stream: .location).first.map { String(decoding: $0.payload, as: UTF8.self) } ?? "none")
        let byTime = Dictionary(uniqueKeysWithValues: drive.map { (RFC3339.string(from: $0.time), $0) })
        var previous: String?
        for record in records {
            let timestamp = try XCTUnwrap(record["timestamp"] as? String)
            let epoch = try XCTUnwrap(byTime[timestamp], "record at \(timestamp) is not an epoch of the drive")
            try assertRecord(record, matches: epoch)
            if let previous { XCTAssertLessThan(previous, timestamp, "records out of order or duplicated") }
            previous = timestamp
        }
        // One record per interval at most, never one per fix: the drive had 60 fixes in
        // about 12 s, sampled every second.
        XCTAssertLessThanOrEqual(records.count, Int(elapsed.rounded(.up)) + 2)
        XCTAssertGreaterThanOrEqual(records.count, 4, "too few samples of a 12 s drive at 1 s")
        XCTAssertLessThan(records.count, drive.count)
        XCTAssertEqual(Set(records.compactMap { $0["id"] as? String }).count, records.count, "ids not unique")
        XCTAssertTrue(fixture.stream.liveness() == .unhealthy(reason: "the location stream is not running"))
    }

    func testNoFixWritesNoRecords() throws {
        let rig = try GPSDRig()
        let fixture = try LocationFixture(port: rig.port, interval: 1)
        fixture.stream.start()
        try fixture.waitUntilConnected()

        // Three seconds without a fix (three sampling ticks), then a fix, then no fix again.
        let start = Date().addingTimeInterval(-60)
        let noFixBefore = NMEADrive.synthetic(epochs: 15, start: start, hasFix: false)
        let fixes = NMEADrive.synthetic(epochs: 5, start: start.addingTimeInterval(15))
        let noFixAfter = NMEADrive.synthetic(epochs: 15, start: start.addingTimeInterval(20), hasFix: false)
        let feeder = NMEAFeeder(rig: rig, epochs: noFixBefore + fixes + noFixAfter, period: feedPeriod)
        feeder.start()
        XCTAssertTrue(feeder.waitUntilDone(timeout: 60))
        let lastFix = RFC3339.string(from: fixes[fixes.count - 1].time)
        try waitUntil("the last fix to be recorded", timeout: 15) {
            try fixture.recordTimestamps().contains(lastFix)
        }
        fixture.stream.stop()

        let fixTimes = Set(fixes.map { RFC3339.string(from: $0.time) })
        let timestamps = try fixture.recordTimestamps()
        XCTAssertFalse(timestamps.isEmpty)
        for timestamp in timestamps {
            XCTAssertTrue(fixTimes.contains(timestamp), "a record at \(timestamp) was written without a fix")
        }
        XCTAssertEqual(timestamps.last, lastFix, "a record followed the loss of the fix")
    }

    func testGPSDKilledAndRestartedResumesWithoutRestartingTheStream() throws {
        let rig = try GPSDRig()
        // Default reconnect timings: what a user gets.
        let fixture = try LocationFixture(port: rig.port, interval: 1)
        fixture.stream.start()
        try fixture.waitUntilConnected()

        let drive = NMEADrive.synthetic(epochs: 400, start: Date().addingTimeInterval(-120))
        let feeder = NMEAFeeder(rig: rig, epochs: drive, period: 0.25)
        feeder.start()
        defer { feeder.stop() }
        try waitUntil("two records before the kill", timeout: 20) { try fixture.records().count >= 2 }

        rig.killGPSD()
        try waitUntil("the stream to notice gpsd is gone", timeout: 20) { !fixture.stream.liveness().isHealthy }
        let reason = fixture.stream.liveness().reason ?? ""
        XCTAssertTrue(reason.contains("gpsd at 127.0.0.1:\(rig.port)"), reason)
        // The newest fix that arrived before the kill (it may still be written at the
        // next tick); only a later one proves gpsd is delivering again.
        let lastBefore = RFC3339.string(from: try XCTUnwrap(fixture.stream.status().lastFixTime))

        try rig.startGPSD()
        let restarted = Date()
        try waitUntil("records to resume after gpsd restarted", timeout: 30) {
            try fixture.recordTimestamps().contains { $0 > lastBefore }
        }
        XCTAssertLessThan(Date().timeIntervalSince(restarted), 30)
        XCTAssertTrue(fixture.stream.liveness().isHealthy, "\(fixture.stream.liveness())")
        XCTAssertEqual(fixture.log.count(.warning, containing: "gpsd at 127.0.0.1"), 1,
                       "one warning per outage: \(fixture.log.messages(.warning))")
        XCTAssertEqual(fixture.log.count(.notice, containing: "is back"), 1)
    }

    func testGPSDAbsentAtStartIsUnhealthyWithAReasonAndRecoversWhenItAppears() throws {
        let rig = try GPSDRig(startGPSD: false)
        var tuning = LocationTuning()
        tuning.reconnect = Backoff(base: 0.05, cap: 0.2)
        let fixture = try LocationFixture(port: rig.port, interval: 1, tuning: tuning)
        fixture.stream.start()

        try waitUntil("several failed attempts", timeout: 20) {
            fixture.log.count(.debug, containing: "still no gpsd") >= 5
        }
        let health = fixture.stream.liveness()
        XCTAssertFalse(health.isHealthy)
        XCTAssertEqual(health.reason?.hasPrefix("cannot reach gpsd at 127.0.0.1:\(rig.port): connection refused"), true,
                       "\(health)")
        XCTAssertEqual(health.reason?.contains("systemctl status gpsd"), true, "\(health)")
        XCTAssertEqual(fixture.log.count(.warning), 1, "one warning per outage: \(fixture.log.messages(.warning))")
        XCTAssertFalse(fixture.stream.status().connected)

        try rig.startGPSD()
        try fixture.waitUntilConnected()
        let drive = NMEADrive.synthetic(epochs: 10, start: Date().addingTimeInterval(-30))
        let feeder = NMEAFeeder(rig: rig, epochs: drive, period: feedPeriod)
        feeder.start()
        defer { feeder.stop() }
        try waitUntil("a record once gpsd appeared", timeout: 20) { try !fixture.records().isEmpty }
        XCTAssertTrue(fixture.stream.liveness().isHealthy, "\(fixture.stream.liveness())")
        XCTAssertNotNil(fixture.stream.status().lastFixAge)
    }

    /// A real gpsd fed a synthetic drive of `epochs` reports, one every `period` seconds
    /// (its first dated `startAgo` seconds ago), and a started stream sampling it every
    /// `interval`.
    func streamOnFedGPSD(interval: Int, epochs: Int, startAgo: TimeInterval, period: TimeInterval) throws -> (GPSDRig, LocationFixture, NMEAFeeder) {
        let rig = try GPSDRig()
        let fixture = try LocationFixture(port: rig.port, interval: interval)
        fixture.stream.start()
        let drive = NMEADrive.synthetic(epochs: epochs, start: Date().addingTimeInterval(-startAgo))
        let feeder = NMEAFeeder(rig: rig, epochs: drive, period: period)
        feeder.start()
        return (rig, fixture, feeder)
    }

    /// gpsd reports ten times a second here (a real receiver: once); the thread must not
    /// wake for each report but once per tick: counted by the kernel (the thread's
    /// voluntary context switches) against the reports gpsd sent in the same stretch.
    func testTheThreadSleepsThroughReportsAndWakesPerTick() throws {
        let (_, fixture, feeder) = try streamOnFedGPSD(interval: 3, epochs: 600, startAgo: 900, period: 0.1)
        defer { feeder.stop() }

        // From the first record on: the reads right after connecting are done with.
        try waitUntil("a first record", timeout: 30) { try fixture.records().count >= 1 }
        let before = try XCTUnwrap(ThreadSwitches.voluntary(named: "ariata-location"), "no ariata-location thread")
        let first = try XCTUnwrap(fixture.records().last?["timestamp"] as? String)
        try waitUntil("three more records", timeout: 60) { try fixture.records().count >= 4 }
        let after = try XCTUnwrap(ThreadSwitches.voluntary(named: "ariata-location"))
        let last = try XCTUnwrap(fixture.records().last?["timestamp"] as? String)
        fixture.stream.stop()

        // Drive epochs are a second apart in gpsd's time: the reports between the records.
        let reports = try Int(XCTUnwrap(RFC3339.milliseconds(from: last)) - XCTUnwrap(RFC3339.milliseconds(from: first))) / 1_000
        let switches = after - before
        print("measured: location thread \(switches) voluntary switches over \(reports) gpsd reports and 3 ticks")
        XCTAssertGreaterThanOrEqual(reports, 50, "gpsd did not report as fed")
        // Per tick: the wake-up, and the record's commit (its fsyncs wait for the disk).
        XCTAssertLessThan(switches, reports / 3, "the thread woke for gpsd's reports")
    }

    /// A gpsd whose receiver says nothing (unplugged) costs no wake-ups: with no fix to
    /// write, the thread sleeps through the ticks until gpsd talks, and then records again.
    func testASilentGPSDCostsNoWakeUps() throws {
        let rig = try GPSDRig()
        let fixture = try LocationFixture(port: rig.port, interval: 1)
        fixture.stream.start()
        try fixture.waitUntilConnected()
        Thread.sleep(forTimeInterval: 2)   // past the first tick, and the greeting read
        let before = try XCTUnwrap(ThreadSwitches.voluntary(named: "ariata-location"), "no ariata-location thread")
        Thread.sleep(forTimeInterval: 5)   // five ticks
        let after = try XCTUnwrap(ThreadSwitches.voluntary(named: "ariata-location"))
        print("measured: location thread \(after - before) voluntary switches over five silent ticks")
        XCTAssertLessThanOrEqual(after - before, 1, "the thread woke for ticks with nothing to write")

        let drive = NMEADrive.synthetic(epochs: 10, start: Date().addingTimeInterval(-30))
        let feeder = NMEAFeeder(rig: rig, epochs: drive, period: 0.2)
        feeder.start()
        defer { feeder.stop() }
        try waitUntil("a record once gpsd talks again", timeout: 20) { try !fixture.records().isEmpty }
        fixture.stream.stop()
    }

    /// The thread sleeps between ticks, but not through gpsd going away: the socket's
    /// close wakes it, so the loss is seen long before the next tick (15 s later).
    func testGPSDGoingAwayIsNoticedBetweenTicks() throws {
        let (rig, fixture, feeder) = try streamOnFedGPSD(interval: 15, epochs: 100, startAgo: 200, period: 0.5)
        defer { feeder.stop() }
        // After the first tick: the thread now sleeps until the next one.
        try waitUntil("the first record", timeout: 30) { try !fixture.records().isEmpty }
        rig.killGPSD()
        try waitUntil("the stream to notice gpsd is gone", timeout: 10) { !fixture.stream.status().connected }
        XCTAssertEqual(try fixture.records().count, 1, "no tick came yet: the loss was seen from the socket")
        fixture.stream.stop()
    }

    private func assertRecord(_ record: [String: Any], matches epoch: DriveEpoch,
                              file: StaticString = #filePath, line: UInt = #line) throws {
        func number(_ key: String) throws -> Double {
            try XCTUnwrap(record[key] as? Double, "\(key) missing in \(record)", file: file, line: line)
        }
        XCTAssertEqual(try number("latitude"), epoch.latitude, accuracy: 1e-7, file: file, line: line)
        XCTAssertEqual(try number("longitude"), epoch.longitude, accuracy: 1e-7, file: file, line: line)
        XCTAssertEqual(try number("altitude"), epoch.altitude, accuracy: 0.001, file: file, line: line)
        // gpsd's JSON carries speed to the millimetre per second.
        XCTAssertEqual(try number("speed"), epoch.speed, accuracy: 0.001, file: file, line: line)
        XCTAssertEqual(try number("course"), epoch.course, accuracy: 0.001, file: file, line: line)
        XCTAssertGreaterThan(try number("horizontal_accuracy"), 0, file: file, line: line)
        XCTAssertGreaterThan(try number("vertical_accuracy"), 0, file: file, line: line)
        XCTAssertEqual(record["fix_mode"] as? Int, 3, file: file, line: line)
        XCTAssertEqual(record["satellites_used"] as? Int, epoch.satellitesUsed, file: file, line: line)
        XCTAssertNotNil(UUID(uuidString: record["id"] as? String ?? ""), file: file, line: line)
    }
}
