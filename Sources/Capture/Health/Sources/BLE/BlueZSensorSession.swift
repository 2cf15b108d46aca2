import AgentCore
import DBus
import Foundation
import Platform
import Synchronization

/// One connection to a heart-rate sensor through BlueZ, over a bus link of its own
/// (`BlueZ.service`: BlueZ as a `DBusService`):
/// finds the sensor (a discovery filtered on the Heart Rate Service when BlueZ does not
/// know it yet), connects, waits for its services, and starts notifications of the Heart
/// Rate Measurement. Notifications arrive as `PropertiesChanged` of the characteristic's
/// `Value` on the bus thread and go to `onValue`; the battery (BlueZ's `Battery1`, which
/// bluetoothd fills from the Battery Service 0x180F) to `onBattery`. `ended` is woken when
/// the session is of no more use (the sensor disconnected, BlueZ left the bus, the bus
/// was lost): the source then opens another (docs/streams/health.md#bluetooth-le-sensors).
final class BlueZSensorSession: Sendable {
    let target: BLESensorTarget
    let ended: Waker
    private let service: DBusService
    private let connection: DBusConnection
    private let registrations = Mutex<[DBusRegistration]>([])
    /// Rung by the handlers while the session starts (a device appeared, services resolved).
    private let changed: Doorbell
    private let state = Mutex(State())

    private struct State {
        var devicePath: String?
        var deviceName: String?
        var deviceAddress: String?
        var deviceAddressType: BLEAddressType?
        var characteristicPath: String?
        var servicesResolved = false
        var endedBy: BlueZProblem?
        var adapterOffersMonitor = false
        /// bluetoothd seen on the bus: its going or another owner ends the session.
        var bluezSeen = false
    }

    /// Why the session ended, once it has.
    var endedBy: BlueZProblem? { state.withLock { $0.endedBy } }
    var devicePath: String? { state.withLock { $0.devicePath } }
    /// The name the sensor advertises (BlueZ's `Name`, else its `Alias`), once found.
    var deviceName: String? { state.withLock { $0.deviceName } }
    /// The address BlueZ has the sensor under, once found: another than the target's when
    /// it was found by its advertised name (its address changed).
    var deviceAddress: String? { state.withLock { $0.deviceAddress } }
    var deviceAddressType: BLEAddressType? { state.withLock { $0.deviceAddressType } }
    /// Whether the sensor's adapter offers BlueZ's advertisement monitor (what watches a
    /// strap while it is away, docs/streams/health.md#while-a-strap-is-away).
    var adapterOffersAdvertisementMonitor: Bool { state.withLock { $0.adapterOffersMonitor } }

    struct Handlers: Sendable {
        var onValue: @Sendable ([UInt8]) -> Void
        var onBattery: @Sendable (Int) -> Void
    }

    /// Connects and starts notifications; blocks (at most the tuning's scan and connect
    /// times) unless `stop` is woken.
    init(target: BLESensorTarget, tuning: BLETuning, stop: Waker, handlers: Handlers) throws(BlueZProblem) {
        self.target = target
        service = BlueZ.service(tuning.bus)
        connection = try BlueZ.connect(service)
        do {
            ended = try Waker()
            changed = try Doorbell()
        } catch {
            service.link.close()
            throw .noBus("\(error)")
        }
        do {
            try begin(tuning: tuning, stop: stop, handlers: handlers)
        } catch {
            close(disconnect: false)
            throw error
        }
    }

    deinit { close(disconnect: false) }

    /// Ends the session; with `disconnect` (the source stops) the sensor is let go too, so
    /// it can sleep.
    func close(disconnect: Bool) {
        let paths = state.withLock { ($0.devicePath, $0.characteristicPath) }
        if disconnect, connection.lostReason == nil, !ended.isWoken {
            if let characteristic = paths.1 {
                _ = try? connection.call(DBusMethodCall(destination: BlueZ.service, path: characteristic,
                                                        interface: BlueZ.gattCharacteristic, member: "StopNotify"), timeout: 2)
            }
            if let device = paths.0 {
                _ = try? connection.call(DBusMethodCall(destination: BlueZ.service, path: device, interface: BlueZ.device,
                                                        member: "Disconnect"), timeout: 2)
            }
        }
        for registration in registrations.withLock({ r -> [DBusRegistration] in defer { r = [] }; return r }) {
            registration.cancel()
        }
        service.link.close()
        ended.wake()
    }

    private func end(_ problem: BlueZProblem) {
        state.withLock { if $0.endedBy == nil { $0.endedBy = problem } }
        ended.wake()
        changed.ring()
    }

    private func begin(tuning: BLETuning, stop: Waker, handlers: Handlers) throws(BlueZProblem) {
        let target = self.target
        // bluetoothd leaving (or restarting) ends the connection to the sensor with it, as
        // does the bus lost. Not yet running is no end: the calls say so.
        let following = service.follow { [weak self] event in
            guard let self else { return }
            switch event {
            case .appeared:
                if state.withLock({ s in defer { s.bluezSeen = true }; return s.bluezSeen }) { end(.notRunning) }
            case .vanished(.notOnBus):
                if state.withLock({ $0.bluezSeen }) { end(.notRunning) }
            case .vanished(.noBus(let error)):
                end(.noBus(error.description))
            }
        }
        registrations.withLock { $0.append(following) }
        try keep(connection.subscribe(DBusMatchRule(sender: BlueZ.service, interface: BlueZ.objectManager,
                                                    member: "InterfacesRemoved")) { [weak self] message in
            guard let self, let removed = message.arguments.first?.string else { return }
            let device = self.devicePath
            if let device, device == removed || device.hasPrefix(removed + "/") { self.end(.disconnected(target)) }
        })
        try keep(connection.subscribe(DBusMatchRule(sender: BlueZ.service, interface: BlueZ.objectManager,
                                                    member: "InterfacesAdded")) { [weak self] _ in self?.changed.ring() })

        var objects = try managedObjects()
        guard !objects.adapters.isEmpty else { throw .noAdapter }
        var found = objects.deviceOrRenamed(target)
        if found == nil, tuning.scanSeconds > 0 {
            found = try discover(tuning: tuning, stop: stop, objects: &objects)
        }
        guard let (devicePath, device) = found else { throw .notFound(target) }
        let adapterPath = device["Adapter"]?.string ?? objects.adapters[0].path
        if let adapter = objects.objects[adapterPath]?[BlueZ.adapter], adapter["Powered"]?.bool == false {
            throw .adapterOff((adapterPath as NSString).lastPathComponent)
        }
        state.withLock {
            $0.devicePath = devicePath
            $0.deviceName = device["Name"]?.string ?? device["Alias"]?.string
            $0.deviceAddress = device["Address"]?.string?.uppercased()
            $0.deviceAddressType = device["AddressType"]?.string.flatMap(BLEAddressType.init(rawValue:))
            $0.servicesResolved = device["ServicesResolved"]?.bool == true
            $0.adapterOffersMonitor = objects.objects[adapterPath]?[BlueZAdvertisementMonitor.managerInterface] != nil
        }
        if let battery = objects.objects[devicePath]?[BlueZ.battery]?["Percentage"]?.int { handlers.onBattery(battery) }
        try keep(connection.subscribe(.propertiesChanged(sender: BlueZ.service, path: devicePath)) { [weak self] message in
            guard let self, let change = DBusPropertiesChange(message) else { return }
            switch change.interface {
            case BlueZ.device:
                if change.changed["Connected"]?.bool == false { self.end(.disconnected(target)) }
                if let resolved = change.changed["ServicesResolved"]?.bool {
                    self.state.withLock { $0.servicesResolved = resolved }
                    self.changed.ring()
                }
            case BlueZ.battery:
                if let percentage = change.changed["Percentage"]?.int { handlers.onBattery(percentage) }
            default: break
            }
        })

        if device["Connected"]?.bool != true {
            do {
                _ = try connection.call(DBusMethodCall(destination: BlueZ.service, path: devicePath, interface: BlueZ.device,
                                                       member: "Connect"), timeout: tuning.connectTimeout)
            } catch let error where error.remoteName == "org.bluez.Error.AlreadyConnected" {
                // Connected meanwhile by someone else: as good.
            } catch {
                throw Self.problem(error, connecting: target)
            }
        }
        let deadline = Monotonic.now + tuning.connectTimeout
        while !state.withLock({ $0.servicesResolved }) {
            if let problem = endedBy { throw problem }
            // The property may have changed before the subscription: read it once.
            if (try? connection.property("ServicesResolved", of: BlueZ.device, at: devicePath, on: BlueZ.service,
                                         timeout: 5))?.bool == true { break }
            let left = deadline - Monotonic.now
            guard left > 0 else { throw .connectFailed(target, "its services were not resolved within \(Int(tuning.connectTimeout)) s") }
            if wait(stop: stop, timeout: left) == .woken { throw .failed("stopped") }
        }
        objects = try managedObjects()
        guard let characteristic = objects.heartRateMeasurement(of: devicePath) else { throw .noHeartRateService(target) }
        if let battery = objects.objects[devicePath]?[BlueZ.battery]?["Percentage"]?.int { handlers.onBattery(battery) }
        state.withLock { $0.characteristicPath = characteristic }
        try keep(connection.subscribe(.propertiesChanged(sender: BlueZ.service, path: characteristic)) { message in
            guard let change = DBusPropertiesChange(message), change.interface == BlueZ.gattCharacteristic,
                  let value = change.changed["Value"]?.bytes else { return }
            handlers.onValue(value)
        })
        do {
            _ = try connection.call(DBusMethodCall(destination: BlueZ.service, path: characteristic,
                                                   interface: BlueZ.gattCharacteristic, member: "StartNotify"), timeout: tuning.connectTimeout)
        } catch let error where error.remoteName == "org.bluez.Error.NotPermitted" || error.remoteName == "org.bluez.Error.NotAuthorized" {
            throw .needsPairing(target, error.description)
        } catch let error where error.remoteName == "org.bluez.Error.InProgress" {
            // Notifications already being started (another client): they reach us too.
        } catch {
            throw Self.problem(error, connecting: target)
        }
        if let problem = endedBy { throw problem }
    }

    /// Looks for the sensor (by its address, else its advertised name) for `scanSeconds`
    /// with a discovery filtered on LE and the Heart Rate Service; the discovery is
    /// stopped again whatever happens.
    private func discover(tuning: BLETuning, stop: Waker,
                          objects: inout BlueZObjects) throws(BlueZProblem) -> (path: String, properties: [String: DBusValue])? {
        guard let adapter = objects.adapters.first(where: { $0.properties["Powered"]?.bool != false }) else {
            throw .adapterOff(objects.adapters.map { ($0.path as NSString).lastPathComponent }.joined(separator: ", "))
        }
        try BlueZDiscovery(connection: connection, adapter: adapter.path).start()
        defer { BlueZDiscovery(connection: connection, adapter: adapter.path).stop() }
        let deadline = Monotonic.now + tuning.scanSeconds
        while true {
            if let found = objects.deviceOrRenamed(target) { return found }
            let left = deadline - Monotonic.now
            guard left > 0 else { return nil }
            if wait(stop: stop, timeout: left) == .woken { throw .failed("stopped") }
            if let problem = endedBy { throw problem }
            objects = try managedObjects()
        }
    }

    /// Sleeps until a handler rings, `stop` is woken or `timeout` passes.
    private func wait(stop: Waker, timeout: TimeInterval) -> Waker.Outcome {
        let outcome = stop.wait(for: changed.fd, timeout: timeout)
        changed.clear()
        return outcome
    }

    private func managedObjects() throws(BlueZProblem) -> BlueZObjects {
        try BlueZObjects.fetch(connection)
    }

    private func keep(_ make: @autoclosure () throws(DBusError) -> DBusRegistration) throws(BlueZProblem) {
        do {
            let registration = try make()
            registrations.withLock { $0.append(registration) }
        } catch {
            throw Self.problem(error, connecting: nil)
        }
    }

    static func problem(_ error: DBusError, connecting target: BLESensorTarget?) -> BlueZProblem {
        if error.isServiceMissing { return .notRunning }
        if error.isAccessDenied, case .remote(_, let message) = error { return .accessDenied(message) }
        if case .notConnected = error { return .noBus(error.description) }
        if let target, case .remote(let name, let message) = error, name.hasPrefix("org.bluez.Error.") || error.isNoReply {
            return .connectFailed(target, message.isEmpty ? name : message)
        }
        return .failed(error.description)
    }
}

/// Discovery on one adapter, limited to LE devices that advertise the Heart Rate Service
/// (so a scan in a busy place does not fill BlueZ with headphones and phones).
struct BlueZDiscovery {
    let connection: DBusConnection
    let adapter: String

    func start() throws(BlueZProblem) {
        do {
            _ = try connection.call(DBusMethodCall(destination: BlueZ.service, path: adapter, interface: BlueZ.adapter,
                                                   member: "SetDiscoveryFilter",
                                                   arguments: [.dictionary(["Transport": .string("le"),
                                                                            "UUIDs": .array(element: "s", [.string(BlueZ.heartRateService)])])]),
                                    timeout: 10)
            _ = try connection.call(DBusMethodCall(destination: BlueZ.service, path: adapter, interface: BlueZ.adapter,
                                                   member: "StartDiscovery"), timeout: 10)
        } catch where error.remoteName == "org.bluez.Error.InProgress" {
            // Another client's discovery is running: its results are ours too.
        } catch where error.remoteName == "org.bluez.Error.NotReady" {
            throw .adapterOff((adapter as NSString).lastPathComponent)
        } catch {
            throw BlueZSensorSession.problem(error, connecting: nil)
        }
    }

    func stop() {
        _ = try? connection.call(DBusMethodCall(destination: BlueZ.service, path: adapter, interface: BlueZ.adapter,
                                                member: "StopDiscovery"), timeout: 5)
    }
}

extension DBusError {
    /// The D-Bus error name of a remote error (`org.bluez.Error.Failed`), nil for others.
    var remoteName: String? {
        if case .remote(let name, _) = self { return name }
        return nil
    }
}
