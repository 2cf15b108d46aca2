import AgentCore
import Foundation
import Platform
import XCTest

/// What `[power]` makes of a power-supply reading: the upload factor on battery, the
/// microphone paused and uploads held below the low-battery mark.
final class PowerPolicyTests: XCTestCase {
    func testThePolicy() {
        var config = PowerConfig()
        config.batteryUploadFactor = 3
        let mains = PowerPolicy(reading: PowerReading(source: .mains, batteryPercent: 10), config: config, queueNearLimit: false)
        XCTAssertEqual([mains.uploadFactor], [1])
        XCTAssertFalse(mains.microphonePaused || mains.uploadsPostponed, "a low battery that charges changes nothing")
        XCTAssertEqual(mains.effects(uploadInterval: 300, config: config), [])
        let battery = PowerPolicy(reading: PowerReading(source: .battery, batteryPercent: 60), config: config, queueNearLimit: false)
        XCTAssertEqual(battery.uploadFactor, 3)
        XCTAssertEqual(battery.effects(uploadInterval: 300, config: config), ["uploads every 900 s instead of 300 s (on battery)"])
        let low = PowerPolicy(reading: PowerReading(source: .battery, batteryPercent: 14), config: config, queueNearLimit: false)
        XCTAssertTrue(low.microphonePaused && low.uploadsPostponed)
        let full = PowerPolicy(reading: PowerReading(source: .battery, batteryPercent: 14), config: config, queueNearLimit: true)
        XCTAssertTrue(full.microphonePaused)
        XCTAssertFalse(full.uploadsPostponed, "a queue near its limit is uploaded even on a low battery")
        config.enabled = false
        XCTAssertEqual(PowerPolicy(reading: low.reading, config: config, queueNearLimit: false).uploadFactor, 1)
    }
}
