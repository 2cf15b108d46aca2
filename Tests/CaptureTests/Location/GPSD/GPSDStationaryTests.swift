import AgentCore
@testable import Capture
import Foundation
import TestRigs
import XCTest

/// A parked receiver, and one whose fixes are too coarse, against a real gpsd fed with
/// generated NMEA through a pty pair. Epochs go five times faster than real time and the
/// stationary state is judged by the fixes' own times, so a parked minute takes 12 s.
final class GPSDStationaryTests: XCTestCase {
    private let feedPeriod: TimeInterval = 0.2
    private let park = (latitude: 52.520_008, longitude: 13.404_954)

    /// Standing at `park` with a few metres of jitter, as a receiver on a shelf reports.
    private func parked(epochs: Int, start: Date) -> [DriveEpoch] {
        NMEADrive.synthetic(epochs: epochs, start: start, origin: park).enumerated().map { i, epoch in
            var e = epoch
            let phase = Double(i)
            e.latitude = NMEADrive.quantized(park.latitude + 3 * sin(phase * 1.7) / 111_320)
            e.longitude = NMEADrive.quantized(park.longitude + 3 * cos(phase * 2.3) / (111_320 * cos(park.latitude * .pi / 180)))
            e.speed = 0
            e.course = 0
            return e
        }
    }

    private func metres(_ record: [String: Any], from point: (latitude: Double, longitude: Double)) throws -> Double {
        let latitude = try XCTUnwrap(record["latitude"] as? Double)
        let longitude = try XCTUnwrap(record["longitude"] as? Double)
        return Geodesy.distance(fromLatitude: point.latitude, longitude: point.longitude, toLatitude: latitude, longitude: longitude)
    }

    func testAParkedReceiverWritesAboutOneRecordPerStationaryIntervalAndTheFirstFixThatLeavesAtOnce() throws {
        let rig = try GPSDRig()
        var tuning = LocationTuning()
        tuning.stationaryWindow = 10
        let stationaryInterval = 20
        let fixture = try LocationFixture(port: rig.port, interval: 1, tuning: tuning) { $0.stationaryInterval = stationaryInterval }
        fixture.stream.start()
        try fixture.waitUntilConnected()

        // 100 s parked, then a drive that starts 100 m north: its first fix leaves at once.
        let start = Date().addingTimeInterval(-300).timeIntervalSince1970.rounded(.down)
        let parkedEpochs = parked(epochs: 100, start: Date(timeIntervalSince1970: start))
        let driveStart = Date(timeIntervalSince1970: start + 100)
        let drive = NMEADrive.synthetic(epochs: 25, start: driveStart, origin: (park.latitude + 100 / 111_320, park.longitude))
        let feeder = NMEAFeeder(rig: rig, epochs: parkedEpochs + drive, period: feedPeriod)
        feeder.start()
        defer { feeder.stop() }
        XCTAssertTrue(feeder.waitUntilDone(timeout: 60), "the feeder did not finish")
        let lastTime = RFC3339.string(from: drive[drive.count - 1].time)
        try waitUntil("the last epoch to be recorded", timeout: 15) { try fixture.recordTimestamps().contains(lastTime) }
        fixture.stream.stop()

        let records = try fixture.records()
        let times = try records.map { try XCTUnwrap(($0["timestamp"] as? String).flatMap(RFC3339.date(from:))) }
        let parkedTimes = times.filter { $0 < driveStart }.map(\.timeIntervalSince1970)
        print("parked: \(parkedTimes.map { Int($0 - start) }), drive: \(times.filter { $0 >= driveStart }.map { Int($0.timeIntervalSince1970 - start) })")

        // Sampled every 5 s of fixes, the park would give 20 records; once the window says
        // it stands still, one per stationary interval.
        let settled = parkedTimes.filter { $0 >= start + 15 }
        XCTAssertTrue((3...6).contains(settled.count), "about one record per \(stationaryInterval) s while parked: \(parkedTimes)")
        for (a, b) in zip(settled, settled.dropFirst()) {
            XCTAssertGreaterThanOrEqual(b - a, Double(stationaryInterval), "parked records closer than the stationary interval")
        }
        XCTAssertLessThanOrEqual(parkedTimes.count, 10)
        let thinned = fixture.stream.counters()[StreamCounter.stationaryThinned] ?? 0
        XCTAssertGreaterThanOrEqual(thinned, 8, "the fixes kept back are counted")

        // The first fix of the drive ends the state and is written as it is read, not
        // at the next tick nor after the stationary interval.
        let firstDriven = try XCTUnwrap(records.first { ($0["timestamp"] as? String).flatMap(RFC3339.date(from:)).map { $0 >= driveStart } ?? false })
        XCTAssertEqual(firstDriven["timestamp"] as? String, RFC3339.string(from: drive[0].time))
        XCTAssertGreaterThan(try metres(firstDriven, from: park), 90)
        // Moving, a record every tick again: 25 fixes in 5 s.
        XCTAssertGreaterThanOrEqual(times.filter { $0 >= driveStart }.count, 4)
        // The same records, only fewer: every one is an epoch fed, unchanged.
        let byTime = Dictionary(uniqueKeysWithValues: (parkedEpochs + drive).map { (RFC3339.string(from: $0.time), $0) })
        for record in records {
            let epoch = try XCTUnwrap(byTime[record["timestamp"] as? String ?? ""])
            XCTAssertEqual(record["latitude"] as? Double ?? 0, epoch.latitude, accuracy: 1e-7)
            XCTAssertEqual(record["longitude"] as? Double ?? 0, epoch.longitude, accuracy: 1e-7)
        }
    }

    func testFixesCoarserThanMaxAccuracyAreNotWrittenAndCounted() throws {
        let rig = try GPSDRig()
        let fixture = try LocationFixture(port: rig.port, interval: 1)
        XCTAssertEqual(fixture.stream.config.maxAccuracy, 1_000, "the default ceiling")
        fixture.stream.start()
        try fixture.waitUntilConnected()

        // An HDOP of 70 makes gpsd's eph well over a kilometre.
        let start = Date().addingTimeInterval(-120)
        let coarse = NMEADrive.synthetic(epochs: 20, start: start).map { epoch in
            var e = epoch
            e.hdop = 70
            e.vdop = 90
            e.pdop = 99
            return e
        }
        let fine = NMEADrive.synthetic(epochs: 20, start: start.addingTimeInterval(20))
        let feeder = NMEAFeeder(rig: rig, epochs: coarse, period: feedPeriod)
        feeder.start()
        defer { feeder.stop() }
        XCTAssertTrue(feeder.waitUntilDone(timeout: 30))
        try waitUntil("the coarse fixes to be counted", timeout: 10) {
            (fixture.stream.counters()[StreamCounter.tooCoarse] ?? 0) >= 2
        }
        XCTAssertEqual(try fixture.records().count, 0, "no record from a fix over max_accuracy")
        let seen = try XCTUnwrap(fixture.stream.details()[StreamCounter.lastAccuracy].flatMap { Double($0) })
        XCTAssertGreaterThan(seen, 1_000, "the last accuracy seen is the coarse one")
        XCTAssertEqual(fixture.log.count(.notice, containing: "gives only coarse fixes"), 1, "said once")

        let feeder2 = NMEAFeeder(rig: rig, epochs: fine, period: feedPeriod)
        feeder2.start()
        defer { feeder2.stop() }
        XCTAssertTrue(feeder2.waitUntilDone(timeout: 30))
        let lastTime = RFC3339.string(from: fine[fine.count - 1].time)
        try waitUntil("the fine fixes to be recorded", timeout: 15) { try fixture.recordTimestamps().contains(lastTime) }
        fixture.stream.stop()
        let records = try fixture.records()
        XCTAssertGreaterThanOrEqual(records.count, 3)
        for record in records {
            let accuracy = try XCTUnwrap(record["horizontal_accuracy"] as? Double)
            XCTAssertLessThanOrEqual(accuracy, 1_000)
            XCTAssertGreaterThanOrEqual(try XCTUnwrap(record["timestamp"] as? String), RFC3339.string(from: fine[0].time))
        }
        XCTAssertEqual(fixture.log.count(.notice, containing: "within max_accuracy again"), 1)
    }
}
