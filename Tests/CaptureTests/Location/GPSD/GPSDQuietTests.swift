import AgentCore
@testable import Capture
import Logging
import Platform
import XCTest

/// How long gpsd may go without a fix while connected before the stream says so.
final class GPSDQuietTests: XCTestCase {
    private let now = Date(timeIntervalSince1970: 1_790_000_000)

    private func gpsd(staleFixAfter: TimeInterval = 120) -> GPSDSource {
        var config = LocationConfig()
        config.gpsdHost = "localhost"
        config.gpsdPort = 2947
        var tuning = LocationTuning()
        tuning.staleFixAfter = staleFixAfter
        return GPSDSource(config: config, tuning: tuning, clock: SystemClock(), logger: Logger(label: "test"),
                          timeEvidence: TimeEvidence())
    }

    private func quiet(connectedFor seconds: TimeInterval, fixAge: TimeInterval?) -> Liveness {
        gpsd().quietLiveness(connectedSince: now.addingTimeInterval(-seconds), lastFixAge: fixAge, now: now)
    }

    func testConnectedWithRecentFixesIsHealthy() {
        XCTAssertEqual(quiet(connectedFor: 600, fixAge: 5), .healthy)
    }

    func testAReceiverWithoutAFixForTooLongIsReported() {
        let neverFixed = quiet(connectedFor: 300, fixAge: nil)
        XCTAssertEqual(neverFixed.reason?.contains("connected to gpsd at localhost:2947 but no fix since connecting for 300 s"), true,
                       "\(neverFixed)")
        let lostFix = quiet(connectedFor: 900, fixAge: 200)
        XCTAssertEqual(lostFix.reason?.contains("but no fix for 200 s"), true, "\(lostFix)")
        // A cold start within the limit is fine.
        XCTAssertEqual(quiet(connectedFor: 60, fixAge: nil), .healthy)
    }

    /// The limit without a tuning: three sampling intervals, at least two minutes.
    func testTheDefaultLimitFollowsTheInterval() {
        var config = LocationConfig()
        config.interval = 60
        let source = GPSDSource(config: config, tuning: LocationTuning(), clock: SystemClock(), logger: Logger(label: "test"),
                                timeEvidence: TimeEvidence())
        XCTAssertEqual(source.quietLiveness(connectedSince: now.addingTimeInterval(-170), lastFixAge: nil, now: now), .healthy)
        XCTAssertFalse(source.quietLiveness(connectedSince: now.addingTimeInterval(-190), lastFixAge: nil, now: now).isHealthy)
    }
}
