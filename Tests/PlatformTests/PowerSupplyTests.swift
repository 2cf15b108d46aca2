import Platform
import Foundation
import TestRigs
import XCTest

/// Reading /sys/class/power_supply from fake trees laid out as the kernel lays them out.
final class PowerSupplyTests: XCTestCase {
    func supply(_ root: TemporaryDirectory, _ name: String, _ attributes: [String: String]) throws {
        try FakePowerSupply(path: root.path).set(name, attributes)
    }

    func testNoBatteryIsMains() throws {
        let root = try TemporaryDirectory("sysfs")
        XCTAssertEqual(PowerSupply.read(path: root.path), PowerReading(source: .mains))
        XCTAssertEqual(PowerSupply.read(path: root.file("missing")), PowerReading(source: .mains))
        try supply(root, "AC", ["type": "Mains", "online": "0"])   // a desktop's odd entry, no battery
        XCTAssertEqual(PowerSupply.read(path: root.path).source, .mains)
    }

    func testALaptopOnAndOffMains() throws {
        let root = try TemporaryDirectory("sysfs")
        try supply(root, "AC", ["type": "Mains", "online": "1"])
        try supply(root, "BAT0", ["type": "Battery", "present": "1", "capacity": "80", "status": "Charging"])
        try supply(root, "hidpp_battery_0", ["type": "Battery", "scope": "Device", "capacity": "5", "status": "Discharging"])
        XCTAssertEqual(PowerSupply.read(path: root.path), PowerReading(source: .mains, batteryPercent: 80, batteryStatus: "Charging"),
                       "a mouse's battery is not the system's")
        try supply(root, "AC", ["online": "0"])
        try supply(root, "BAT0", ["status": "Discharging", "capacity": "12"])
        XCTAssertEqual(PowerSupply.read(path: root.path), PowerReading(source: .battery, batteryPercent: 12, batteryStatus: "Discharging"))
        // USB-C power delivery counts as mains.
        try supply(root, "ucsi-source-psy-USBC000:001", ["type": "USB", "online": "1"])
        XCTAssertEqual(PowerSupply.read(path: root.path).source, .mains)
    }

    func testWithoutAnExternalSupplyTheBatteryStatusDecides() throws {
        let root = try TemporaryDirectory("sysfs")
        try supply(root, "battery", ["type": "Battery", "capacity": "55", "status": "Discharging"])
        XCTAssertEqual(PowerSupply.read(path: root.path).source, .battery)
        try supply(root, "battery", ["status": "Full"])
        XCTAssertEqual(PowerSupply.read(path: root.path).source, .mains)
    }
}
