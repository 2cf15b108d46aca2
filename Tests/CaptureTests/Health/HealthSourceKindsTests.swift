import AgentCore
import Capture
import XCTest

/// The two lists of health input kinds agree: every `kind = "..."` the configuration
/// accepts has a `HealthSourceKind` that makes its source and checks it, and no kind is
/// registered that the configuration would refuse.
final class HealthSourceKindsTests: XCTestCase {
    func testEveryKindTheConfigurationAcceptsIsMadeAndChecked() throws {
        let names = HealthSourceSettings.kindNames
        XCTAssertFalse(names.isEmpty)
        XCTAssertEqual(Set(names).count, names.count, "a kind named twice")
        let bed = try HealthTestBed()
        let context = HealthSourceContext(health: HealthConfig(), queue: bed.database.recordQueue, logger: HealthTestBed.logger)
        // No BlueZ: a sensor's check fails at once instead of waiting for one.
        let checking = HealthCheckContext(serviceUser: "nobody", bus: .address("unix:path=/nonexistent/bus"))
        var registered = Set<ObjectIdentifier>()
        for name in names {
            // Accepted as a kind, whatever else the entry lacks (a path, an address).
            do {
                _ = try AgentConfig(toml: "[[health.source]]\nkind = \"\(name)\"", file: "agent.toml")
            } catch let error as ConfigError {
                XCTAssertNotEqual(error.key, "health.source[1].kind", "\(name): \(error)")
            }
            let settings = try XCTUnwrap(HealthSourceSettings(defaultsOf: name), "\(name)")
            XCTAssertEqual(settings.kind, name)
            let kind = try XCTUnwrap(HealthSourceKinds.kind(of: settings), "\(name): not in HealthSourceKinds.all")
            registered.insert(ObjectIdentifier(kind))
            let source = try XCTUnwrap(HealthSourceKinds.make(settings, context: context), "\(name)")
            XCTAssertEqual(source.status().kind, name)
            XCTAssertEqual(source.status().liveness, .unhealthy(reason: "starting"))
            let check = HealthSourceKinds.check(settings, context: checking)
            XCTAssertEqual(check.stream, .health)
            XCTAssertTrue(check.name.hasPrefix("health \(name) "), check.name)
            XCTAssertNotEqual(check.outcome, .ok, "\(name): nothing to read here, yet \(check)")
        }
        XCTAssertEqual(registered.count, HealthSourceKinds.all.count, "a registered kind the configuration does not accept")
    }

    /// Only the kinds that need a group ask for one.
    func testTheServiceUserNeedsDialoutForASerialPortOnly() {
        let file = HealthSourceSettings.file(FileSourceSettings(path: "/var/log/hr.jsonl"))
        let serial = HealthSourceSettings.serial(SerialSourceSettings(path: "/dev/ttyUSB0"))
        let ble = HealthSourceSettings.ble(BLESourceSettings(address: "A0:9E:1A:12:34:56"))
        XCTAssertEqual(HealthSourceKinds.serviceUserGroups([file, ble]), [])
        XCTAssertEqual(HealthSourceKinds.serviceUserGroups([serial, file, serial]), ["dialout"])
    }
}
