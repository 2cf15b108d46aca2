import AgentCore
@testable import Capture
import XCTest

final class StationaryFilterTests: XCTestCase {
    private let start = 1_790_000_000
    private let park = (latitude: 52.520_008, longitude: 13.404_954)

    private func fix(_ second: Int, north: Double = 0, east: Double = 0, eph: Double? = 5,
                     at origin: (latitude: Double, longitude: Double)? = nil) -> LocationFix {
        let origin = origin ?? park
        let metresPerDegree = Geodesy.earthRadius * .pi / 180
        var longitude = origin.longitude + east / (metresPerDegree * cos(origin.latitude * .pi / 180))
        if longitude > 180 { longitude -= 360 }
        return LocationFix(mode: 3, time: FixTime(seconds: start + second, nanoseconds: 0),
                           latitude: origin.latitude + north / metresPerDegree, longitude: longitude,
                           horizontalAccuracy: eph, source: .gpsd)
    }

    private func filter(interval: Int = 10, stationaryInterval: Int = 60, minDistance: Int = 0) -> StationaryFilter {
        StationaryFilter(interval: interval, stationaryInterval: stationaryInterval, minDistance: minDistance,
                         window: 60, minimumRadius: 15)
    }

    /// A few metres of jitter, the same every run.
    private func jitter(_ second: Int) -> (north: Double, east: Double) {
        (3 * sin(Double(second) * 1.7), 3 * cos(Double(second) * 2.3))
    }

    /// Feeds a fix a second and samples every `interval` seconds as the stream does:
    /// the seconds whose fix was written.
    private func run(_ filter: inout StationaryFilter, seconds: Range<Int>, interval: Int = 10,
                     fix make: (Int) -> LocationFix) -> [Int] {
        var written: [Int] = []
        for second in seconds {
            let fix = make(second)
            let leaving = filter.observe(fix)
            if leaving || (second + 1) % interval == 0, filter.decide(fix) == .write {
                filter.passed(fix)
                written.append(second)
            }
        }
        return written
    }

    func testAParkedReceiverWritesAboutOneRecordPerStationaryInterval() {
        var f = filter()
        let written = run(&f, seconds: 0..<600) { s in let j = jitter(s); return fix(s, north: j.north, east: j.east) }
        XCTAssertTrue(f.isStationary)
        // Every tick until a minute of fixes says it stands still, then one a minute.
        let afterWindow = written.filter { $0 > 70 }
        XCTAssertEqual(written.filter { $0 < 60 }.count, 6, "before a full window every tick writes")
        XCTAssertTrue((8...10).contains(afterWindow.count), "\(written)")
        for (a, b) in zip(afterWindow, afterWindow.dropFirst()) {
            XCTAssertGreaterThanOrEqual(b - a, 60, "while stationary records are a stationary interval apart: \(written)")
        }
    }

    func testTheFirstFixThatLeavesEndsTheStateAndIsWrittenAtOnce() {
        var f = filter()
        _ = run(&f, seconds: 0..<200) { s in let j = jitter(s); return fix(s, north: j.north, east: j.east) }
        XCTAssertTrue(f.isStationary)
        // Still within its error: no record.
        XCTAssertFalse(f.observe(fix(200, north: 10)))
        XCTAssertEqual(f.decide(fix(200, north: 10)), .thin)
        let away = fix(201, north: 40)
        XCTAssertTrue(f.observe(away), "a fix beyond its own error of the mean leaves")
        XCTAssertFalse(f.isStationary)
        XCTAssertEqual(f.decide(away), .write)
        f.passed(away)
        // Moving again: every tick writes.
        let written = run(&f, seconds: 202..<260) { s in fix(s, north: 40 + Double(s - 201) * 10) }
        XCTAssertEqual(written, [209, 219, 229, 239, 249, 259])
    }

    func testTheErrorIsTheFixsOwnWhenItIsLarger() {
        var f = filter()
        // 25 m of wander, inside an eph of 40 m.
        _ = run(&f, seconds: 0..<120) { s in fix(s, north: 25 * sin(Double(s)), eph: 40) }
        XCTAssertTrue(f.isStationary)
        var g = filter()
        // The same wander with an eph of 5 m: beyond the least radius, not stationary.
        _ = run(&g, seconds: 0..<120) { s in fix(s, north: 25 * sin(Double(s)), eph: 5) }
        XCTAssertFalse(g.isStationary)
    }

    func testASlowWalkIsNeverStationary() {
        var f = filter()
        let written = run(&f, seconds: 0..<300) { s in fix(s, north: Double(s) * 1.2) }
        XCTAssertFalse(f.isStationary)
        XCTAssertEqual(written.count, 30)
    }

    func testAStationaryIntervalOfTheIntervalTurnsTheStateOff() {
        var f = filter(interval: 10, stationaryInterval: 10)
        let written = run(&f, seconds: 0..<300) { s in fix(s) }
        XCTAssertFalse(f.isStationary)
        XCTAssertEqual(written.count, 30)
    }

    func testMinDistanceKeepsBackFixesNearTheLastRecord() {
        var f = filter(minDistance: 50)
        // 2 m a second: a tick every 20 m, so every third tick is 60 m from the last record.
        let written = run(&f, seconds: 0..<120) { s in fix(s, north: Double(s) * 2) }
        XCTAssertEqual(written, [9, 39, 69, 99])
    }

    func testAParkedReceiverAcrossTheAntimeridianIsStationary() {
        var f = filter()
        let origin = (latitude: -16.5, longitude: 179.999_9)
        _ = run(&f, seconds: 0..<120) { s in
            let j = jitter(s)
            return fix(s, north: j.north, east: j.east + 5, at: origin)
        }
        XCTAssertTrue(f.isStationary)
    }

    func testTimeGoingBackStartsAgain() {
        var f = filter()
        _ = run(&f, seconds: 0..<120) { s in fix(s) }
        XCTAssertTrue(f.isStationary)
        XCTAssertFalse(f.observe(fix(10)))
        XCTAssertFalse(f.isStationary)
    }
}
