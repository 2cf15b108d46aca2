import AgentCore
import DBus

/// BlueZ's names (its doc/org.bluez.*.rst) and the GATT numbers of the Heart Rate Service.
enum BlueZ {
    static let service = "org.bluez"
    static let adapter = "org.bluez.Adapter1"
    static let device = "org.bluez.Device1"
    static let battery = "org.bluez.Battery1"
    static let gattService = "org.bluez.GattService1"
    static let gattCharacteristic = "org.bluez.GattCharacteristic1"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"

    /// Heart Rate Service (0x180D) and its Heart Rate Measurement characteristic (0x2A37),
    /// as 128-bit UUIDs on the Bluetooth base.
    static let heartRateService = "0000180d-0000-1000-8000-00805f9b34fb"
    static let heartRateMeasurement = "00002a37-0000-1000-8000-00805f9b34fb"

    /// BlueZ over a link of its own (thread `ariata-bluez`), not the process's shared one:
    /// bluetoothd keeps a discovery and its filter per D-Bus client, so two users of one
    /// connection would stop each other's (docs/decisions/0016-one-connection-per-bus.md).
    static func service(_ bus: DBusBus) -> DBusService {
        DBusService(service, on: DBusLink(bus, threadName: "ariata-bluez"))
    }

    /// The connection of `service`'s link; no bus is `.noBus`.
    static func connect(_ service: DBusService) throws(BlueZProblem) -> DBusConnection {
        do {
            return try service.connection()
        } catch {
            throw .noBus(error.description)
        }
    }

    /// A one-shot connection of `onboard`'s and `doctor`'s (a scan, a pairing), closed
    /// when they are done; no bus is `.noBus`.
    static func connect(_ bus: DBusBus) throws(BlueZProblem) -> DBusConnection {
        do {
            return try DBusConnection(bus, threadName: "ariata-bluez")
        } catch {
            throw .noBus(error.description)
        }
    }
}

/// Which sensor a source wants: its address, or else the name it advertises. With both,
/// the address is looked for first and the name when BlueZ no longer knows the address.
public struct BLESensorTarget: Sendable, Equatable, CustomStringConvertible {
    public var address: String?
    public var name: String?

    public init(address: String?, name: String?) {
        self.address = address
        self.name = name
    }

    init(_ config: BLESourceSettings, adoptedAddress: String? = nil) {
        address = adoptedAddress ?? config.address
        name = config.address == nil ? config.name : config.advertisedName
    }

    /// The same sensor by its advertised name alone: how it is found again when its
    /// address changed. nil without both.
    var byName: BLESensorTarget? {
        guard address != nil, let name else { return nil }
        return BLESensorTarget(address: nil, name: name)
    }

    public var description: String { address ?? "\"\(name ?? "")\"" }

    func matches(_ device: [String: DBusValue]) -> Bool {
        if let address { return device["Address"]?.string?.uppercased() == address }
        guard let name else { return false }
        return device["Name"]?.string == name || device["Alias"]?.string == name
    }
}

/// BlueZ's object tree, as `GetManagedObjects` answers: path → interface → properties.
struct BlueZObjects {
    var objects: [String: [String: [String: DBusValue]]]

    init(_ answer: [DBusValue]) throws(DBusError) {
        guard let tree = answer.first?.dictionary else { throw .malformed("GetManagedObjects without a dictionary") }
        var objects: [String: [String: [String: DBusValue]]] = [:]
        for (path, interfaces) in tree {
            var byInterface: [String: [String: DBusValue]] = [:]
            for (name, properties) in interfaces.dictionary ?? [:] { byInterface[name] = properties.dictionary ?? [:] }
            objects[path] = byInterface
        }
        self.objects = objects
    }

    /// BlueZ's objects now (`GetManagedObjects`).
    static func fetch(_ connection: DBusConnection) throws(BlueZProblem) -> BlueZObjects {
        do {
            return try BlueZObjects(connection.call(DBusMethodCall(destination: BlueZ.service, path: "/",
                                                                   interface: BlueZ.objectManager, member: "GetManagedObjects"),
                                                    timeout: 10))
        } catch {
            throw BlueZSensorSession.problem(error, connecting: nil)
        }
    }

    /// Adapters by path, sorted (hci0 first).
    var adapters: [(path: String, properties: [String: DBusValue])] {
        objects.compactMap { path, interfaces in interfaces[BlueZ.adapter].map { (path, $0) } }.sorted { $0.path < $1.path }
    }

    /// The device the target names, by its address, else by its advertised name (the
    /// address changed), if BlueZ knows it.
    func deviceOrRenamed(_ target: BLESensorTarget) -> (path: String, properties: [String: DBusValue])? {
        device(target) ?? target.byName.flatMap(device)
    }

    /// The device the target names, if BlueZ knows it.
    func device(_ target: BLESensorTarget) -> (path: String, properties: [String: DBusValue])? {
        objects.compactMap { path, interfaces -> (String, [String: DBusValue])? in
            guard let device = interfaces[BlueZ.device], target.matches(device) else { return nil }
            return (path, device)
        }.sorted { $0.0 < $1.0 }.first
    }

    /// Every device that offers the Heart Rate Service (in its advertised UUIDs).
    var heartRateDevices: [(path: String, properties: [String: DBusValue])] {
        objects.compactMap { path, interfaces -> (String, [String: DBusValue])? in
            guard let device = interfaces[BlueZ.device],
                  (device["UUIDs"]?.items ?? []).contains(where: { $0.string?.lowercased() == BlueZ.heartRateService })
            else { return nil }
            return (path, device)
        }.sorted { $0.0 < $1.0 }
    }

    /// The Heart Rate Measurement characteristic of the device at `devicePath`.
    func heartRateMeasurement(of devicePath: String) -> String? {
        let services = objects.compactMap { path, interfaces -> String? in
            guard let service = interfaces[BlueZ.gattService], service["Device"]?.string == devicePath,
                  service["UUID"]?.string?.lowercased() == BlueZ.heartRateService else { return nil }
            return path
        }
        return objects.compactMap { path, interfaces -> String? in
            guard let characteristic = interfaces[BlueZ.gattCharacteristic],
                  let service = characteristic["Service"]?.string, services.contains(service),
                  characteristic["UUID"]?.string?.lowercased() == BlueZ.heartRateMeasurement else { return nil }
            return path
        }.sorted().first
    }
}
