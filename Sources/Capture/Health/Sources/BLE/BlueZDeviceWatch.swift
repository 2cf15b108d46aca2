import AgentCore
import DBus
import Foundation
import Synchronization

/// While a source's sensor is away: BlueZ's own signs that it is back, so the source tries
/// to connect when the sensor advertises rather than in a loop. A sign is the sensor's
/// `Device1` appearing (`InterfacesAdded`, by its address or its advertised name), or a
/// change BlueZ makes only when it hears or reaches the device (`RSSI` during a discovery,
/// `Connected` or `ServicesResolved` when the kernel connects a bonded device by itself).
/// `discover`/`endDiscovery` run the source's low-duty filtered discovery
/// (docs/streams/health.md#while-a-strap-is-away).
final class BlueZDeviceWatch: Sendable {
    private let service: DBusService
    private let connection: DBusConnection
    private let registrations = Mutex<[DBusRegistration]>([])
    /// The paths of BlueZ's devices that are the sensor (by address or name).
    private let paths = Mutex<Set<String>>([])
    private let adapter: String?
    private let discovering = Mutex(false)

    /// - Parameter onSeen: called on the bus thread with what BlueZ saw.
    init(target: BLESensorTarget, bus: DBusBus, onSeen: @escaping @Sendable (String) -> Void) throws(BlueZProblem) {
        service = BlueZ.service(bus)
        connection = try BlueZ.connect(service)
        let objects: BlueZObjects
        do {
            objects = try BlueZObjects.fetch(connection)
        } catch {
            service.link.close()
            throw error
        }
        adapter = objects.adapters.first { $0.properties["Powered"]?.bool != false }?.path
        paths.withLock { paths in
            for candidate in [target, target.byName].compactMap({ $0 }) {
                if let device = objects.device(candidate) { paths.insert(device.path) }
            }
        }
        do {
            let added = try connection.subscribe(DBusMatchRule(sender: BlueZ.service, interface: BlueZ.objectManager,
                                                               member: "InterfacesAdded")) { [weak self] message in
                guard message.arguments.count >= 2, let path = message.arguments[0].string,
                      let device = message.arguments[1].dictionary?[BlueZ.device]?.dictionary,
                      target.matches(device) || target.byName?.matches(device) == true else { return }
                self?.paths.withLock { _ = $0.insert(path) }
                onSeen("BlueZ found it (\(device["Address"]?.string ?? path))")
            }
            let changed = try connection.subscribe(DBusMatchRule(sender: BlueZ.service, interface: "org.freedesktop.DBus.Properties",
                                                                 member: "PropertiesChanged", arg0: BlueZ.device)) { [weak self] message in
                guard let path = message.path, self?.paths.withLock({ $0.contains(path) }) == true,
                      let change = DBusPropertiesChange(message) else { return }
                if change.changed["RSSI"] != nil {
                    onSeen("it advertises")
                } else if change.changed["Connected"]?.bool == true || change.changed["ServicesResolved"]?.bool == true {
                    onSeen("BlueZ connected it")
                }
            }
            registrations.withLock { $0 = [added, changed] }
        } catch {
            service.link.close()
            throw BlueZSensorSession.problem(error, connecting: nil)
        }
    }

    deinit { close() }

    /// Starts a discovery filtered on the Heart Rate Service (nothing without a powered adapter).
    func discover() {
        guard let adapter, !discovering.withLock({ $0 }) else { return }
        do {
            try BlueZDiscovery(connection: connection, adapter: adapter).start()
            discovering.withLock { $0 = true }
        } catch {
            // The next attempt to connect says what is wrong; the watch only listens.
        }
    }

    func endDiscovery() {
        guard let adapter, discovering.withLock({ s in defer { s = false }; return s }) else { return }
        BlueZDiscovery(connection: connection, adapter: adapter).stop()
    }

    func close() {
        endDiscovery()
        for registration in registrations.withLock({ r -> [DBusRegistration] in defer { r = [] }; return r }) {
            registration.cancel()
        }
        service.link.close()
    }
}
