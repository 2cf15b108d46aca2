import AgentCore
@testable import Capture
import TestRigs
import XCTest

final class LocationStatusTests: XCTestCase {
    private let now = Date(timeIntervalSince1970: 1_790_000_000)

    private func status(_ link: GPSDLinkState, fixAge: TimeInterval? = nil, writeError: String? = nil) -> LocationStatus {
        LocationStatus(endpoint: "localhost:2947", link: link, lastFixTime: nil, lastFixAge: fixAge,
                       recordsWritten: 0, lastRecordAt: nil, writeError: writeError)
    }

    func testConnectedWithRecentFixesIsHealthy() {
        let health = status(.connected(since: now.addingTimeInterval(-600)), fixAge: 5).health(now: now, staleFixAfter: 120)
        XCTAssertEqual(health, .healthy)
    }

    func testAReceiverWithoutAFixForTooLongIsReported() {
        let neverFixed = status(.connected(since: now.addingTimeInterval(-300))).health(now: now, staleFixAfter: 120)
        XCTAssertEqual(neverFixed.reason?.contains("no fix since connecting for 300 s"), true, "\(neverFixed)")
        let lostFix = status(.connected(since: now.addingTimeInterval(-900)), fixAge: 200).health(now: now, staleFixAfter: 120)
        XCTAssertEqual(lostFix.reason?.contains("but no fix for 200 s"), true, "\(lostFix)")
        // A cold start within the limit is fine.
        XCTAssertEqual(status(.connected(since: now.addingTimeInterval(-60))).health(now: now, staleFixAfter: 120), .healthy)
    }

    func testUnreachableGpsdCarriesItsReason() {
        let health = status(.unreachable(reason: "cannot reach gpsd at x", since: now)).health(now: now, staleFixAfter: 120)
        XCTAssertEqual(health, .unhealthy(reason: "cannot reach gpsd at x"))
    }

    func testAQueueThatRefusesRecordsIsReported() {
        let health = status(.connected(since: now), fixAge: 1, writeError: "disk full").health(now: now, staleFixAfter: 120)
        XCTAssertEqual(health.reason, "cannot write location records to the queue: disk full")
    }

    func testStopInterruptsAReconnectWait() throws {
        // Nothing listens on this port and the reader then sleeps a minute before trying
        // again; stop() must cut that short instead of waiting out its own time limit.
        let port = try FreePort.find()
        var tuning = LocationTuning()
        tuning.reconnect = .constant(60)
        tuning.stopTimeout = 10
        let fixture = try LocationFixture(port: port, tuning: tuning)
        fixture.stream.start()
        try waitUntil("the first failed attempt", timeout: 20) { !fixture.stream.liveness().isHealthy }
        fixture.stream.stop()
        XCTAssertEqual(fixture.log.count(.warning, containing: "did not stop"), 0, "\(fixture.log.messages(.warning))")
        XCTAssertEqual(fixture.stream.liveness(), .unhealthy(reason: "the location stream is not running"))
    }
}
