import AgentCore
import Foundation
@testable import Setup
import XCTest

/// `doctor`'s check of a sensor the running daemon holds, from the daemon's status: a
/// connected one passes, a silent one fails with its fix, one the daemon does not hold is
/// left to the probe (nil). (Connecting is tested in DoctorCommandTests, the daemon's
/// side in BLEHeartRateDaemonTests.)
final class DaemonHeldSensorsTests: XCTestCase {
    func sensor(_ name: String, connected: Bool, state: SensorStatus.State, battery: Int? = 70) -> SensorStatus {
        SensorStatus(name: name, connected: connected, battery: battery, disconnectedSince: nil, lastGapFrom: nil, lastGapSeconds: nil,
                     hrvWindowsDropped: 0, noContactReadings: 0, address: "A0:9E:1A:12:34:56", state: state)
    }

    func testTheDaemonsSensorsAreReportedFromItsStatus() {
        let held = DaemonHeldSensors(daemonSensors: [sensor("chest", connected: true, state: .connected),
                                                     sensor("silent", connected: false, state: .silent),
                                                     sensor("away", connected: false, state: .away)])
        let chest = held.check(BLESourceSettings(address: "A0:9E:1A:12:34:56", name: "chest"))
        XCTAssertEqual(chest?.outcome, .ok)
        XCTAssertEqual(chest?.detail, "connected to the running daemon (from its status; doctor leaves the connection alone), battery 70 %")
        let silent = held.check(BLESourceSettings(address: "A0:9E:1A:12:34:56", name: "silent"))
        XCTAssertEqual(silent?.outcome, .failed)
        XCTAssertTrue(silent?.fix?.contains("bluetoothctl remove A0:9E:1A:12:34:56") == true, "\(String(describing: silent))")
        XCTAssertNil(held.check(BLESourceSettings(address: "A0:9E:1A:12:34:56", name: "away")), "not held: the probe connects")
        XCTAssertNil(DaemonHeldSensors(daemonSensors: []).check(BLESourceSettings(address: "A0:9E:1A:12:34:56", name: "chest")))
    }
}
