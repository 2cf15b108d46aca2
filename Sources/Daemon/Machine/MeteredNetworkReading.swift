import DBus
import Foundation

/// What NetworkManager says of the way out: its global `Metered`, the connection that
/// holds the default route (`PrimaryConnection`), and the connections whose devices carry
/// the traffic, each device with its own `Metered` and, on Wi-Fi, the access point's SSID
/// (docs/laptop.md#metered-networks).
public struct MeteredNetworkReading: Sendable, Equatable {
    /// One network device as NetworkManager shows it.
    public struct Device: Sendable, Equatable {
        /// The kernel's name: wlan0, enp0s31f6.
        public var interface: String
        public var metering: NetworkMetering
        /// On Wi-Fi, the access point's SSID.
        public var ssid: String?

        public init(interface: String, metering: NetworkMetering, ssid: String? = nil) {
            self.interface = interface
            self.metering = metering
            self.ssid = ssid
        }
    }

    /// One active connection: its `Id` (the profile's name) and devices.
    public struct Connection: Sendable, Equatable {
        public var id: String
        public var type: String
        public var devices: [Device]

        public init(id: String, type: String, devices: [Device]) {
            self.id = id
            self.type = type
            self.devices = devices
        }
    }

    /// Who says: "NetworkManager".
    public var watchedBy: String
    /// NetworkManager's global `Metered`: the primary connection's device's, which with a
    /// VPN holding the default route is the tunnel's rather than the carrier's.
    public var global: NetworkMetering
    /// The VPN or tunnel that holds the default route, when one does: the carriers are
    /// then the connections under it.
    public var tunnel: String?
    /// The connections whose devices carry the traffic; empty when NetworkManager names
    /// none (no default route, or a NetworkManager too old to say).
    public var carriers: [Connection]

    public init(watchedBy: String, global: NetworkMetering, tunnel: String? = nil, carriers: [Connection] = []) {
        self.watchedBy = watchedBy
        self.global = global
        self.tunnel = tunnel
        self.carriers = carriers
    }
}

/// Reads a `MeteredNetworkReading` from NetworkManager, with blocking calls (never on the
/// bus thread: the watch reads on a queue of its own).
struct NetworkManagerRoute {
    static let service = "org.freedesktop.NetworkManager"
    static let managerPath = "/org/freedesktop/NetworkManager"
    static let managerInterface = "org.freedesktop.NetworkManager"
    static let activeInterface = "org.freedesktop.NetworkManager.Connection.Active"
    static let deviceInterface = "org.freedesktop.NetworkManager.Device"
    static let wirelessInterface = "org.freedesktop.NetworkManager.Device.Wireless"
    static let accessPointInterface = "org.freedesktop.NetworkManager.AccessPoint"
    /// `NMDeviceType` of Wi-Fi.
    static let wifiDeviceType = 2
    /// Connection types that carry nothing themselves: traffic goes through them to a
    /// device under them (a plugin VPN reports `Vpn` true; WireGuard and the others do not).
    static let tunnelTypes: Set<String> = ["vpn", "wireguard", "tun", "ip-tunnel"]

    let connection: DBusConnection
    let timeout: Double

    /// The reading, or why there is none (NetworkManager absent or not answering).
    func read() -> Result<MeteredNetworkReading, ReadFailure> {
        let manager: [String: DBusValue]
        do {
            manager = try connection.properties(of: Self.managerInterface, at: Self.managerPath, on: Self.service, timeout: timeout)
        } catch {
            return .failure(error.isServiceMissing ? .absent : .failed("\(error)"))
        }
        var reading = MeteredNetworkReading(watchedBy: NetworkManagerMeteredWatch.name,
                                            global: NetworkMetering(networkManagerValue: manager["Metered"]?.int ?? 0))
        guard let primaryPath = Self.objectPath(manager["PrimaryConnection"]), let primary = activeConnection(at: primaryPath) else {
            return .success(reading)
        }
        let active = (manager["ActiveConnections"]?.items ?? []).compactMap { Self.objectPath($0) }
        if primary.vpn || Self.tunnelTypes.contains(primary.type) {
            reading.tunnel = primary.id
            reading.carriers = carriers(under: primary, primaryPath: primaryPath, active: active)
        } else {
            reading.carriers = [connection(primary)]
        }
        return .success(reading)
    }

    enum ReadFailure: Error, Equatable {
        case absent
        case failed(String)
    }

    private struct Active {
        var id: String
        var type: String
        var vpn: Bool
        var devices: [String]
        var specificObject: String?
    }

    /// A plugin VPN names its carrier: its `SpecificObject` is the active connection it
    /// runs over, and its `Devices` are the devices under it (whose own `ActiveConnection`
    /// is the carrier). A tunnel that names none (WireGuard) runs over every other active
    /// connection that is no tunnel.
    private func carriers(under tunnel: Active, primaryPath: String, active: [String]) -> [MeteredNetworkReading.Connection] {
        if tunnel.vpn, let parent = tunnel.specificObject, parent != primaryPath, active.contains(parent),
           let carrier = activeConnection(at: parent) {
            return [connection(carrier)]
        }
        if tunnel.vpn {
            let parents = tunnel.devices.compactMap { device in
                Self.objectPath(try? connection.property("ActiveConnection", of: Self.deviceInterface, at: device,
                                                         on: Self.service, timeout: timeout))
            }.filter { $0 != primaryPath }
            let found = Array(Set(parents)).sorted().compactMap(activeConnection(at:)).map(connection)
            if !found.isEmpty { return found }
            if !tunnel.devices.isEmpty { return [connection(tunnel)] }
        }
        return active.filter { $0 != primaryPath }.compactMap(activeConnection(at:))
            .filter { !$0.vpn && !Self.tunnelTypes.contains($0.type) && $0.type != "loopback" }
            .map(connection)
    }

    private func activeConnection(at path: String) -> Active? {
        guard let properties = try? connection.properties(of: Self.activeInterface, at: path, on: Self.service, timeout: timeout) else {
            return nil
        }
        return Active(id: properties["Id"]?.string ?? "", type: properties["Type"]?.string ?? "",
                      vpn: properties["Vpn"]?.bool ?? false,
                      devices: (properties["Devices"]?.items ?? []).compactMap { Self.objectPath($0) },
                      specificObject: Self.objectPath(properties["SpecificObject"]))
    }

    private func connection(_ active: Active) -> MeteredNetworkReading.Connection {
        MeteredNetworkReading.Connection(id: active.id, type: active.type, devices: active.devices.compactMap(device(at:)))
    }

    private func device(at path: String) -> MeteredNetworkReading.Device? {
        guard let properties = try? connection.properties(of: Self.deviceInterface, at: path, on: Self.service, timeout: timeout) else {
            return nil
        }
        var device = MeteredNetworkReading.Device(interface: properties["Interface"]?.string ?? path,
                                                  metering: NetworkMetering(networkManagerValue: properties["Metered"]?.int ?? 0))
        if properties["DeviceType"]?.int == Self.wifiDeviceType,
           let access = Self.objectPath(try? connection.property("ActiveAccessPoint", of: Self.wirelessInterface, at: path,
                                                                  on: Self.service, timeout: timeout)),
           let ssid = (try? connection.property("Ssid", of: Self.accessPointInterface, at: access, on: Self.service,
                                                timeout: timeout))?.bytes {
            device.ssid = String(decoding: ssid, as: UTF8.self)
        }
        return device
    }

    /// An object path that names an object ("/" names none).
    private static func objectPath(_ value: DBusValue?) -> String? {
        guard let path = value?.string, path != "/", !path.isEmpty else { return nil }
        return path
    }
}
