import AgentCore
import Foundation
@testable import Reports
import XCTest

/// A heart-rate sensor's line of `status`, and its detail as the daemon stores it: the
/// address in use, an adopted address and the state, read back also from a daemon that
/// wrote none of them.
final class SensorStatusTests: XCTestCase {
    func testAnAdoptedAddressAndASilentStrapAreShown() throws {
        let adopted = SensorStatus(name: "Polar H10 12345678", connected: true, battery: 80, disconnectedSince: nil, lastGapFrom: nil,
                                   lastGapSeconds: nil, hrvWindowsDropped: 0, noContactReadings: 0, address: "C4:7F:51:0A:1B:2C",
                                   adoptedAddress: "C4:7F:51:0A:1B:2C", state: .connected)
        XCTAssertEqual(StatusText.sensorLine(adopted),
                       "sensor Polar H10 12345678: connected, battery 80 %; found under a new address C4:7F:51:0A:1B:2C (the config keeps the old one)")
        var silent = adopted
        silent.adoptedAddress = nil
        silent.connected = false
        silent.state = .silent
        XCTAssertEqual(StatusText.sensorLine(silent), "sensor Polar H10 12345678: connected but silent (see its health), battery 80 %")

        let text = SensorStatus.encode([adopted])
        XCTAssertTrue(text.contains(#""adoptedAddress":"C4:7F:51:0A:1B:2C""#), text)
        XCTAssertEqual(SensorStatus.decode(text), [adopted])
        let older = #"[{"name":"strap","connected":true,"hrvWindowsDropped":0,"noContactReadings":0}]"#
        let read = try XCTUnwrap(SensorStatus.decode(older)?.first)
        XCTAssertNil(read.state)
        XCTAssertNil(read.adoptedAddress)
        XCTAssertNil(read.awayWatch)
    }

    /// An away sensor's line says how it is watched for (docs/streams/health.md#while-a-strap-is-away).
    func testAnAwaySensorSaysHowItIsWatchedFor() throws {
        let since = try XCTUnwrap(RFC3339.date(from: "2026-11-28T10:00:00Z"))
        var away = SensorStatus(name: "strap", connected: false, battery: nil, disconnectedSince: since, lastGapFrom: nil,
                                lastGapSeconds: nil, hrvWindowsDropped: 0, noContactReadings: 0, state: .away,
                                awayWatch: .advertisementMonitor)
        XCTAssertEqual(StatusText.sensorLine(away),
                       "sensor strap: out of reach since 2026-11-28T10:00:00.000Z (BlueZ's advertisement monitor watches for it)")
        away.awayWatch = .discovery
        XCTAssertTrue(StatusText.sensorLine(away).hasSuffix("(looked for by a short discovery every few minutes: no advertisement monitor from BlueZ)"),
                      StatusText.sensorLine(away))
        XCTAssertEqual(SensorStatus.decode(SensorStatus.encode([away])), [away])
    }
}
