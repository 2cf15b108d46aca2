import Foundation

/// A Bluetooth LE health source's sensor as `status` shows it (its battery, whether it is
/// connected, its last gap), handed from the health stream to `status` as one detail
/// (`StreamCounter.bleSensors`) in JSON (docs/streams/health.md#bluetooth-le-sensors).
public struct SensorStatus: Codable, Sendable, Equatable {
    /// The source's name (`metadata.source`).
    public var name: String
    public var connected: Bool
    /// Percent, as BlueZ last reported it; nil when the sensor has no Battery Service.
    public var battery: Int?
    /// Since when the sensor has been out of reach, while it is.
    public var disconnectedSince: Date?
    /// The last time it was out of reach and came back: when it went and for how long.
    public var lastGapFrom: Date?
    public var lastGapSeconds: Double?
    /// Variability windows without enough clean beats (nothing sent), since the daemon started.
    public var hrvWindowsDropped: Int
    /// Readings the sensor sent while reporting no skin contact (left out), since the daemon started.
    public var noContactReadings: Int
    /// The address in use (nil for a sensor looked for by name, until it is found).
    public var address: String?
    /// The address the sensor was found under by its advertised name, when not the
    /// configured one: kept in the agent's state, not written to the config.
    public var adoptedAddress: String?
    /// Connected and notifying, connected and silent, or away (nil from an older daemon).
    public var state: State?
    /// How the sensor is watched for while away (nil before it was first away, or from an
    /// older daemon).
    public var awayWatch: AwayWatch?

    /// docs/streams/health.md#while-a-strap-is-away
    public enum AwayWatch: String, Codable, Sendable, Equatable {
        /// BlueZ's advertisement monitor: passive scanning, no discovery.
        case advertisementMonitor = "advertisement_monitor"
        /// A filtered discovery of a few seconds every few minutes (bluetoothd offers no monitor).
        case discovery
    }

    public enum State: String, Codable, Sendable, Equatable {
        case connected
        /// Connected, and no notification for a while (docs/streams/health.md).
        case silent
        case away
    }

    /// Below this percentage the battery is warned about.
    public static let lowBattery = 15

    public var batteryLow: Bool { battery.map { $0 < Self.lowBattery } ?? false }

    public init(name: String, connected: Bool, battery: Int?, disconnectedSince: Date?, lastGapFrom: Date?,
                lastGapSeconds: Double?, hrvWindowsDropped: Int, noContactReadings: Int, address: String? = nil,
                adoptedAddress: String? = nil, state: State? = nil, awayWatch: AwayWatch? = nil) {
        self.name = name
        self.connected = connected
        self.battery = battery
        self.disconnectedSince = disconnectedSince
        self.lastGapFrom = lastGapFrom
        self.lastGapSeconds = lastGapSeconds
        self.hrvWindowsDropped = hrvWindowsDropped
        self.noContactReadings = noContactReadings
        self.address = address
        self.adoptedAddress = adoptedAddress
        self.state = state
        self.awayWatch = awayWatch
    }

    /// The detail's text.
    public static func encode(_ sensors: [SensorStatus]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(RFC3339.string(from: date))
        }
        return (try? encoder.encode(sensors)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    /// nil when the text is not one (a detail written by another version).
    public static func decode(_ text: String) -> [SensorStatus]? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = RFC3339.date(from: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not RFC 3339: \(text)"))
            }
            return date
        }
        return try? decoder.decode([SensorStatus].self, from: Data(text.utf8))
    }
}
