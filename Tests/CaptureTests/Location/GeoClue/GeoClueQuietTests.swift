import AgentCore
@testable import Capture
import Logging
import Platform
import XCTest

/// GeoClue sends a fix only when the device moves: only none at all since it started is
/// worth telling.
final class GeoClueQuietTests: XCTestCase {
    private let now = Date(timeIntervalSince1970: 1_790_000_000)

    private func quiet(connectedFor seconds: TimeInterval, fixAge: TimeInterval?) -> Liveness {
        var tuning = LocationTuning()
        tuning.geoClueFirstFixLimit = 600
        let source = GeoClueSource(config: LocationConfig(), tuning: tuning, actsAsItsOwnAgent: true, handover: nil,
                                   clock: SystemClock(), logger: Logger(label: "test"))
        return source.quietLiveness(connectedSince: now.addingTimeInterval(-seconds), lastFixAge: fixAge, now: now)
    }

    func testAStationaryDeviceIsHealthyForHours() {
        XCTAssertEqual(quiet(connectedFor: 6 * 3600, fixAge: 5 * 3600), .healthy)
    }

    func testNoPositionAtAllIsReported() {
        XCTAssertEqual(quiet(connectedFor: 300, fixAge: nil), .healthy, "within the first-fix limit")
        let none = quiet(connectedFor: 900, fixAge: nil)
        XCTAssertEqual(none.reason?.hasPrefix("GeoClue has given no position in 900 s since it started"), true, "\(none)")
    }
}
