import DBus
import Foundation
import Synchronization

/// An advertisement monitor registered with BlueZ (`org.bluez.AdvertisementMonitorManager1`
/// on the adapter): the kernel then scans passively (filtered in the controller where it
/// can, else in bluetoothd) and BlueZ calls the monitor's `DeviceFound` when a device
/// advertises what its patterns say, with the device's object already made. So a strap
/// that starts advertising is heard at once with no discovery running.
///
/// The monitor is an object this connection exports: an application root answering
/// `GetManagedObjects`, and one `AdvertisementMonitor1` under it (type `or_patterns`).
/// BlueZ answers `RegisterMonitor` only after it has read that tree, so the blocking call
/// is made off the bus thread, which answers meanwhile. bluetoothd offers the manager only
/// when it runs with its experimental interfaces (docs/decisions/0017-away-straps-by-advertisement-monitor.md).
final class BlueZAdvertisementMonitor: Sendable {
    static let managerInterface = "org.bluez.AdvertisementMonitorManager1"
    static let monitorInterface = "org.bluez.AdvertisementMonitor1"
    /// Each connection's own tree: BlueZ tells applications apart by owner and path.
    static let appPath = "/org/ariata/agent/advertisement_monitor"
    static let monitorPath = appPath + "/heart_rate"

    private let connection: DBusConnection
    private let adapter: String
    private let registrations = Mutex<[DBusRegistration]>([])
    private let state = Mutex(State())

    private struct State {
        var registered = false
        var released = false
    }

    /// Why no monitor could be registered (the caller falls back to discoveries).
    enum Unavailable: Error, Equatable, CustomStringConvertible {
        /// The adapter has no `AdvertisementMonitorManager1`.
        case noManager
        case refused(String)

        var description: String {
            switch self {
            case .noManager:
                "BlueZ offers no advertisement monitor (bluetoothd has one only with its experimental interfaces: Experimental = true in /etc/bluetooth/main.conf)"
            case .refused(let why): "BlueZ refused the advertisement monitor (\(why))"
            }
        }
    }

    /// Exports the monitor and registers it with `adapter`'s manager.
    /// - Parameters:
    ///   - onFound: on the bus thread, with the path of a device BlueZ found by the patterns.
    ///   - onReleased: on the bus thread, once BlueZ let the monitor go (`Release`).
    init(connection: DBusConnection, adapter: String, patterns: [BlueZAdvertisementPattern],
         onFound: @escaping @Sendable (String) -> Void, onReleased: @escaping @Sendable () -> Void) throws(Unavailable) {
        self.connection = connection
        self.adapter = adapter
        let properties: [String: DBusValue] = [
            "Type": .string("or_patterns"),
            "Patterns": .array(element: "(yyay)", patterns.map(\.value)),
        ]
        let tree = DBusValue.array(element: "{oa{sa{sv}}}", [
            .dictEntry(.objectPath(Self.monitorPath),
                       .array(element: "{sa{sv}}", [.dictEntry(.string(Self.monitorInterface), .dictionary(properties))])),
        ])
        do {
            let root = try connection.export(path: Self.appPath) { call in
                guard call.interface == BlueZ.objectManager, call.member == "GetManagedObjects" else { return .unknown }
                return .values([tree])
            }
            let monitor = try connection.export(path: Self.monitorPath) { [weak self] call in
                switch (call.interface, call.member) {
                case (Self.monitorInterface, "Activate"), (Self.monitorInterface, "DeviceLost"):
                    // In force from registration on; a strap leaving is the session's to see.
                    break
                case (Self.monitorInterface, "Release"):
                    let first = self?.state.withLock { s -> Bool in defer { s.released = true }; return !s.released } ?? false
                    if first { onReleased() }
                case (Self.monitorInterface, "DeviceFound"):
                    if let device = call.arguments.first?.string { onFound(device) }
                case (DBusConnection.propertiesInterface, "Get"):
                    guard call.arguments.count == 2, let name = call.arguments[1].string, let value = properties[name] else {
                        return .error(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no such property")
                    }
                    return .values([.variant(value)])
                case (DBusConnection.propertiesInterface, "GetAll"):
                    return .values([.dictionary(call.arguments.first?.string == Self.monitorInterface ? properties : [:])])
                default:
                    return .unknown
                }
                return .values([])
            }
            registrations.withLock { $0 = [root, monitor] }
        } catch {
            throw .refused(error.description)
        }
        do {
            _ = try connection.call(DBusMethodCall(destination: BlueZ.service, path: adapter, interface: Self.managerInterface,
                                                   member: "RegisterMonitor", arguments: [.objectPath(Self.appPath)]),
                                    timeout: 10)
            state.withLock { $0.registered = true }
        } catch {
            cancelExports()
            if case .remote(let name, _) = error, name == "org.freedesktop.DBus.Error.UnknownMethod"
                || name == "org.freedesktop.DBus.Error.UnknownInterface" || name == "org.freedesktop.DBus.Error.UnknownObject" {
                throw .noManager
            }
            throw .refused(error.description)
        }
    }

    deinit { close() }

    /// Registered and not let go by BlueZ: the strap is watched without a discovery.
    var isWatching: Bool { state.withLock { $0.registered && !$0.released } }

    /// Unregisters (BlueZ also drops it when this connection leaves the bus) and stops
    /// answering. Not on the bus thread.
    func close() {
        let wasRegistered = state.withLock { s -> Bool in defer { s.registered = false }; return s.registered }
        if wasRegistered {
            _ = try? connection.call(DBusMethodCall(destination: BlueZ.service, path: adapter, interface: Self.managerInterface,
                                                    member: "UnregisterMonitor", arguments: [.objectPath(Self.appPath)]),
                                     timeout: 5)
        }
        cancelExports()
    }

    private func cancelExports() {
        for registration in registrations.withLock({ r -> [DBusRegistration] in defer { r = [] }; return r }) {
            registration.cancel()
        }
    }
}

/// One `or_patterns` entry: `content` found at `start` in an advertising data field of
/// type `adType` (the Core Specification Supplement's numbers).
struct BlueZAdvertisementPattern: Sendable, Equatable {
    var start: UInt8
    var adType: UInt8
    var content: [UInt8]

    static let incompleteServiceUUIDs: UInt8 = 0x02
    static let completeServiceUUIDs: UInt8 = 0x03
    static let completeLocalName: UInt8 = 0x09
    /// A pattern is at most this long (BlueZ refuses longer ones).
    static let maxContent = 31

    var value: DBusValue {
        .structure([.byte(start), .byte(adType), .array(element: "y", content.map { .byte($0) })])
    }

    /// What a heart-rate sensor advertises: the Heart Rate Service (0x180D, little-endian)
    /// among the first three 16-bit service UUIDs, complete or incomplete list, and its
    /// complete local name when the target has one. Passive scanning sends no scan request,
    /// so a name only in the scan response is never seen: the service UUID is what finds it.
    static func heartRateSensor(named name: String?) -> [BlueZAdvertisementPattern] {
        var patterns: [BlueZAdvertisementPattern] = []
        for adType in [completeServiceUUIDs, incompleteServiceUUIDs] {
            for start: UInt8 in [0, 2, 4] { patterns.append(.init(start: start, adType: adType, content: [0x0D, 0x18])) }
        }
        if let name, !name.isEmpty {
            let bytes = Array(name.utf8)
            if bytes.count <= maxContent { patterns.append(.init(start: 0, adType: completeLocalName, content: bytes)) }
        }
        return patterns
    }
}
