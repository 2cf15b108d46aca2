import Foundation

/// A sysfs `power_supply` directory the tests write (the agent reads it through
/// `[power] sysfs_path`): one directory per supply, one file per attribute.
public struct FakePowerSupply: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// Writes `attributes` of supply `name` (`type`, `online`, `capacity`, …), making its
    /// directory; attributes not named stay as they were.
    public func set(_ name: String, _ attributes: [String: String]) throws {
        let directory = "\(path)/\(name)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (key, value) in attributes {
            try "\(value)\n".write(toFile: "\(directory)/\(key)", atomically: true, encoding: .utf8)
        }
    }

    /// A laptop: mains online or not, and its battery at `battery` percent, charging while
    /// on mains.
    public func laptop(onMains: Bool, battery: Int) throws {
        try set("AC", ["type": "Mains", "online": onMains ? "1" : "0"])
        try set("BAT0", ["type": "Battery", "present": "1", "capacity": "\(battery)",
                         "status": onMains ? "Charging" : "Discharging"])
    }
}
