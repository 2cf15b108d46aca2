import AgentCore
@testable import Capture
import TestRigs
import XCTest

final class LocationStatusTests: XCTestCase {
    private let now = Date(timeIntervalSince1970: 1_790_000_000)

    private func status(_ link: LocationLink, fixAge: TimeInterval? = nil, writeError: String? = nil) -> LocationStatus {
        LocationStatus(address: "localhost:2947", source: .gpsd, link: link, lastFixTime: nil, lastFixAge: fixAge,
                       recordsWritten: 0, lastRecordAt: nil, writeError: writeError)
    }

    /// The source judges its own quiet only while the link is up and records are written.
    func testTheSourceJudgesOnlyAConnectedStreamsQuiet() {
        let quiet = Liveness.unhealthy(reason: "quiet")
        let since = now.addingTimeInterval(-600)
        var askedSince: Date?
        XCTAssertEqual(status(.connected(since: since), fixAge: 5).liveness(now: now) { askedSince = $0; return quiet }, quiet)
        XCTAssertEqual(askedSince, since)
        XCTAssertEqual(status(.connecting).liveness(now: now) { _ in quiet }, .healthy)
        XCTAssertEqual(status(.idle).liveness(now: now) { _ in quiet }, .unhealthy(reason: "the location stream is not running"))
    }

    func testUnreachableSourceCarriesItsReason() {
        let health = status(.unreachable(reason: "cannot reach gpsd at x", since: now)).liveness(now: now) { _ in .healthy }
        XCTAssertEqual(health, .unhealthy(reason: "cannot reach gpsd at x"))
    }

    func testAQueueThatRefusesRecordsIsReported() {
        let health = status(.connected(since: now), fixAge: 1, writeError: "disk full").liveness(now: now) { _ in .healthy }
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
