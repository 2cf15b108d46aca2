import AgentCore
import DBus
import Foundation

/// A heart-rate sensor BlueZ heard advertising the Heart Rate Service.
public struct BLESensorSighting: Sendable, Equatable {
    public var address: String
    /// The advertised name (BlueZ's `Name`, else its `Alias`, else the address).
    public var name: String
    /// Signal strength in dBm; nil when BlueZ knows the sensor but did not hear it now.
    public var rssi: Int?
    /// Bonded already (`Paired`).
    public var paired: Bool

    public init(address: String, name: String, rssi: Int?, paired: Bool) {
        self.address = address
        self.name = name
        self.rssi = rssi
        self.paired = paired
    }
}

/// Onboarding's look for sensors: a discovery of `seconds` on the first powered adapter,
/// filtered on LE and the Heart Rate Service (the filter the source's own discovery
/// uses), then the devices BlueZ lists with that service, strongest signal first. The
/// adapter is never powered on here: that is the person's decision.
public struct BLESensorScan: Sendable {
    public var bus: DBusBus
    public var seconds: TimeInterval

    public init(bus: DBusBus = .system, seconds: TimeInterval = 8) {
        self.bus = bus
        self.seconds = seconds
    }

    public func run() -> Result<[BLESensorSighting], BLESetupFailure> {
        do throws(BlueZProblem) {
            let connection = try BlueZ.connect(bus)
            defer { connection.close() }
            return .success(try scan(connection))
        } catch {
            return .failure(BLESetupFailure(error))
        }
    }

    private func scan(_ connection: DBusConnection) throws(BlueZProblem) -> [BLESensorSighting] {
        let before = try BlueZObjects.fetch(connection)
        guard !before.adapters.isEmpty else { throw .noAdapter }
        guard let adapter = before.adapters.first(where: { $0.properties["Powered"]?.bool != false }) else {
            throw .adapterOff(before.adapters.map { ($0.path as NSString).lastPathComponent }.joined(separator: ", "))
        }
        let discovery = BlueZDiscovery(connection: connection, adapter: adapter.path)
        try discovery.start()
        // bluetoothd also ends a discovery when its client leaves the bus (Ctrl-C).
        defer { discovery.stop() }
        Thread.sleep(forTimeInterval: seconds)
        return try BlueZObjects.fetch(connection).heartRateDevices.compactMap { _, device in
            guard let address = device["Address"]?.string.flatMap(BLESourceSettings.bluetoothAddress) else { return nil }
            let name = device["Name"]?.string ?? device["Alias"]?.string ?? address
            return BLESensorSighting(address: address, name: name, rssi: device["RSSI"]?.int, paired: device["Paired"]?.bool == true)
        }.sorted { a, b in
            // Strongest first (nearest, most likely the person's own), unheard last.
            a.rssi != b.rssi ? (a.rssi ?? Int.min) > (b.rssi ?? Int.min) : a.name < b.name
        }
    }
}
