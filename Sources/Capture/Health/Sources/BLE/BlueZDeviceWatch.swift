import AgentCore
import DBus
import Foundation
import Synchronization

/// While a source's sensor is away: BlueZ's own signs that it is back, so the source tries
/// to connect when the sensor advertises rather than in a loop. A sign is the sensor's
/// `Device1` appearing (`InterfacesAdded`, by its address or its advertised name), or a
/// change BlueZ makes only when it hears or reaches the device (`RSSI` during a discovery,
/// `Connected` or `ServicesResolved` when the kernel connects a bonded device by itself).
/// With BlueZ's advertisement monitor (`BlueZAdvertisementMonitor`) a sign is also its
/// `DeviceFound`, and no discovery is needed; without it, `discover`/`endDiscovery` run
/// the source's low-duty filtered discovery (docs/streams/health.md#while-a-strap-is-away).
final class BlueZDeviceWatch: Sendable {
    private let service: DBusService
    private let connection: DBusConnection
    private let registrations = Mutex<[DBusRegistration]>([])
    /// The paths of BlueZ's devices that are the sensor (by address or name).
    private let paths = Mutex<Set<String>>([])
    private let adapter = Mutex<String?>(nil)
    private let discovering = Mutex(false)
    private let monitor = Mutex<BlueZAdvertisementMonitor?>(nil)
    private let unavailable = Mutex<BlueZAdvertisementMonitor.Unavailable?>(nil)
    private let stale = Mutex(false)

    /// - Parameters:
    ///   - onSeen: called on the bus thread with what BlueZ saw.
    ///   - onMonitorGone: called on the bus thread when BlueZ let the monitor go
    ///     (discoveries take over at the watch's next tick), or bluetoothd left the bus or
    ///     came back (the watch is then stale: its owner makes a new one).
    init(target: BLESensorTarget, bus: DBusBus, onSeen: @escaping @Sendable (String) -> Void,
         onMonitorGone: @escaping @Sendable () -> Void = {}) throws(BlueZProblem) {
        service = BlueZ.service(bus)
        connection = try BlueZ.connect(service)
        do {
            let added = try connection.subscribe(DBusMatchRule(sender: BlueZ.service, interface: BlueZ.objectManager,
                                                               member: "InterfacesAdded")) { [weak self] message in
                // An adapter (and its monitor manager) that came after the watch began, as
                // when bluetoothd starts: a new watch registers the monitor with it.
                if message.arguments.count >= 2, message.arguments[1].dictionary?[BlueZAdvertisementMonitor.managerInterface] != nil,
                   let self, self.monitor.withLock({ $0 == nil }) {
                    self.stale.withLock { $0 = true }
                    return onMonitorGone()
                }
                guard message.arguments.count >= 2, let path = message.arguments[0].string,
                      let device = message.arguments[1].dictionary?[BlueZ.device]?.dictionary,
                      target.matches(device) || target.byName?.matches(device) == true else { return }
                self?.paths.withLock { _ = $0.insert(path) }
                onSeen("BlueZ found it (\(device["Address"]?.string ?? path))")
            }
            let changed = try connection.subscribe(DBusMatchRule(sender: BlueZ.service, interface: DBusConnection.propertiesInterface,
                                                                 member: "PropertiesChanged", arg0: BlueZ.device)) { [weak self] message in
                guard let path = message.path, self?.paths.withLock({ $0.contains(path) }) == true,
                      let change = DBusPropertiesChange(message) else { return }
                if change.changed["RSSI"] != nil {
                    onSeen("it advertises")
                } else if change.changed["Connected"]?.bool == true || change.changed["ServicesResolved"]?.bool == true {
                    onSeen("BlueZ connected it")
                }
            }
            // A bluetoothd that restarted knows neither the monitor nor the devices it had.
            let owner = try connection.subscribe(.nameOwnerChanged(BlueZ.service)) { [weak self] _ in
                self?.stale.withLock { $0 = true }
                onMonitorGone()
            }
            registrations.withLock { $0 = [added, changed, owner] }
        } catch {
            service.link.close()
            throw BlueZSensorSession.problem(error, connecting: nil)
        }
        // Read after subscribing, so that nothing BlueZ adds in between is missed.
        let objects: BlueZObjects
        do {
            objects = try BlueZObjects.fetch(connection)
        } catch {
            close()
            throw error
        }
        adapter.withLock { $0 = objects.adapters.first { $0.properties["Powered"]?.bool != false }?.path }
        paths.withLock { paths in
            for candidate in [target, target.byName].compactMap({ $0 }) {
                if let device = objects.device(candidate) { paths.insert(device.path) }
            }
        }
        let unavailable = watchByMonitor(target: target, objects: objects, onSeen: onSeen, onReleased: onMonitorGone)
        self.unavailable.withLock { $0 = unavailable }
    }

    /// Registers the advertisement monitor; nil when it watches, else why not.
    private func watchByMonitor(target: BLESensorTarget, objects: BlueZObjects, onSeen: @escaping @Sendable (String) -> Void,
                                onReleased: @escaping @Sendable () -> Void) -> BlueZAdvertisementMonitor.Unavailable? {
        guard let adapter = adapter.withLock({ $0 }), objects.objects[adapter]?[BlueZAdvertisementMonitor.managerInterface] != nil else {
            return .noManager
        }
        let connection = self.connection
        do {
            let registered = try BlueZAdvertisementMonitor(
                connection: connection, adapter: adapter,
                patterns: BlueZAdvertisementPattern.heartRateSensor(named: target.name),
                onFound: { [weak self] path in
                    // The patterns also match other heart-rate sensors nearby: only this one counts.
                    if self?.paths.withLock({ $0.contains(path) }) == true { return onSeen("BlueZ's advertisement monitor heard it") }
                    connection.call(DBusMethodCall(destination: BlueZ.service, path: path, interface: DBusConnection.propertiesInterface,
                                                   member: "GetAll", arguments: [.string(BlueZ.device)]), timeout: 5) { [weak self] result in
                        guard case .success(let answer) = result, let device = answer.first?.dictionary,
                              target.matches(device) || target.byName?.matches(device) == true else { return }
                        self?.paths.withLock { _ = $0.insert(path) }
                        onSeen("BlueZ's advertisement monitor heard it (\(device["Address"]?.string ?? path))")
                    }
                }, onReleased: onReleased)
            monitor.withLock { $0 = registered }
            return nil
        } catch {
            return error
        }
    }

    /// Why the strap is watched by discoveries instead of a monitor (nil while a monitor watches).
    var monitorUnavailable: BlueZAdvertisementMonitor.Unavailable? { unavailable.withLock { $0 } }

    /// An advertisement monitor watches for the strap (BlueZ has not let it go): no discovery is needed.
    var isMonitoring: Bool { !isStale && monitor.withLock { $0?.isWatching ?? false } }

    /// bluetoothd left the bus or came back, or an adapter offering the monitor appeared,
    /// since the watch began: a new watch is needed.
    var isStale: Bool { stale.withLock { $0 } }

    deinit { close() }

    /// Starts a discovery filtered on the Heart Rate Service (nothing without a powered adapter).
    func discover() {
        guard let adapter = adapter.withLock({ $0 }), !discovering.withLock({ $0 }) else { return }
        do {
            try BlueZDiscovery(connection: connection, adapter: adapter).start()
            discovering.withLock { $0 = true }
        } catch {
            // The next attempt to connect says what is wrong; the watch only listens.
        }
    }

    func endDiscovery() {
        guard let adapter = adapter.withLock({ $0 }), discovering.withLock({ s in defer { s = false }; return s }) else { return }
        BlueZDiscovery(connection: connection, adapter: adapter).stop()
    }

    func close() {
        endDiscovery()
        monitor.withLock { m -> BlueZAdvertisementMonitor? in defer { m = nil }; return m }?.close()
        for registration in registrations.withLock({ r -> [DBusRegistration] in defer { r = [] }; return r }) {
            registration.cancel()
        }
        service.link.close()
    }
}
