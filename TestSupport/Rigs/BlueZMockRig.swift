import Foundation

/// bluetoothd as python-dbusmock's bluez5 template on a `DBusRig`'s system bus, with a
/// heart-rate sensor the test drives: an adapter (hci0), the sensor as a device that
/// advertises the Heart Rate Service, its GATT service (0x180D) and Heart Rate Measurement
/// characteristic (0x2A37) added with the mock's AddObject, and Battery1. The template's
/// Connect only flips a flag, so the device's Connect and Disconnect are replaced by ones
/// that set `Connected` and `ServicesResolved` as BlueZ does, and fail while the sensor is
/// "out of range". `notify` sets the characteristic's `Value`, which emits the
/// PropertiesChanged (typed `ay`) BlueZ sends for a notification.
///
/// With `advertisementMonitor` the adapter also has `AdvertisementMonitorManager1`, as
/// bluetoothd offers it when it runs with `Experimental = true`: `RegisterMonitor` reads the
/// application's tree (`GetManagedObjects` of its root, from the caller), answers, then calls
/// `Activate` on each `or_patterns` monitor; a sensor in range that advertises what a
/// monitor's patterns match gets its `Device1` made (when BlueZ did not know it) and the
/// monitor's `DeviceFound(device)` called, whether a discovery runs or not; unregistering
/// calls `Release`.
public final class BlueZMockRig: @unchecked Sendable {
    // Touched from the test's thread only.
    public let mock: DBusMockRig
    /// Where the sensor is now: `moveSensor(to:)` changes it.
    public private(set) var sensorAddress: String
    public let sensorName: String
    public static let adapter = "hci0"
    public static let heartRateService = "0000180d-0000-1000-8000-00805f9b34fb"
    public static let heartRateMeasurement = "00002a37-0000-1000-8000-00805f9b34fb"
    private let battery: Int?
    private let knownToBlueZ: Bool
    private let advertisementMonitor: Bool

    public var adapterPath: String { "/org/bluez/\(Self.adapter)" }
    public var devicePath: String { devicePath(sensorAddress) }
    public var servicePath: String { servicePath(sensorAddress) }
    public var characteristicPath: String { characteristicPath(sensorAddress) }

    public func devicePath(_ address: String) -> String { "\(adapterPath)/dev_\(address.replacingOccurrences(of: ":", with: "_"))" }
    public func servicePath(_ address: String) -> String { "\(devicePath(address))/service000c" }
    public func characteristicPath(_ address: String) -> String { "\(servicePath(address))/char000d" }

    /// - Parameters:
    ///   - knownToBlueZ: false: the sensor is not there until the test calls `addSensor()`.
    public init(on bus: DBusRig, sensorAddress: String = "A0:9E:1A:12:34:56", sensorName: String = "Polar H10 12345678",
                battery: Int? = 84, knownToBlueZ: Bool = true, advertisementMonitor: Bool = false) throws {
        mock = try DBusMockRig(template: "bluez5", name: "org.bluez", path: "/", on: bus)
        self.sensorAddress = sensorAddress
        self.sensorName = sensorName
        self.battery = battery
        self.knownToBlueZ = knownToBlueZ
        self.advertisementMonitor = advertisementMonitor
        try setUp()
    }

    /// bluetoothd restarting: the service leaves the bus and comes back with its objects.
    public func restart() throws {
        mock.stop()
        try mock.start()
        try setUp()
    }

    /// bluetoothd stopped (the service leaves the bus).
    public func stop() { mock.stop() }

    private func setUp() throws {
        if advertisementMonitor {
            try addAdapterWithMonitorManager()
        } else {
            try mock.call("AddAdapter", "ss", [Self.adapter, "ariata-test"], interface: "org.bluez.Mock")
        }
        // A sensor never seen is added by the test (`addSensor`) while a discovery runs,
        // as BlueZ adds a device when it first hears its advertisement.
        if knownToBlueZ { try addSensor() }
    }

    /// The sensor's objects, as BlueZ has them for a device it has seen.
    public func addSensor() throws {
        try addSensor(address: sensorAddress, name: sensorName, battery: battery)
    }

    /// Another heart-rate sensor (a second strap nearby), as BlueZ has it once it heard its
    /// advertisement at `rssi` dBm. With `requiresPairing` it refuses notifications
    /// (org.bluez.Error.NotPermitted, as BlueZ answers an ATT "insufficient
    /// authentication") until `Device1.Pair` has bonded it; that Pair sets `Paired` alone
    /// (the template's would replace the device's UUIDs with a phone's).
    /// With `identityAddress` the sensor advertises from a private (random) address and
    /// takes its identity address on pairing: Pair sets `Address` to it (and `AddressType`
    /// to public), the object's path staying, as BlueZ does once it has the sensor's IRK.
    public func addSensor(address: String, name: String, rssi: Int = -58, battery: Int? = nil,
                          requiresPairing: Bool = false, identityAddress: String? = nil) throws {
        let devicePath = devicePath(address), servicePath = servicePath(address)
        try mock.call("AddDevice", "sss", [Self.adapter, address, name], interface: "org.bluez.Mock")
        try mock.call("UpdateProperties", "sa{sv}", ["org.bluez.Device1", "3", "UUIDs", "as", "1", Self.heartRateService,
                                                     "RSSI", "n", String(rssi),
                                                     "AddressType", "s", identityAddress == nil ? "public" : "random"],
                      object: devicePath)
        let takeIdentity = identityAddress.map {
            "self.UpdateProperties('org.bluez.Device1', {'Address': dbus.String('\($0)', variant_level=1), 'AddressType': dbus.String('public', variant_level=1)})"
        } ?? "pass"
        // A sensor in range that advertises while a discovery runs: BlueZ updates its RSSI.
        // A monitor whose patterns match hears it too: BlueZ updates the RSSI only when it
        // moved by 8 dB or more, and calls the monitor's DeviceFound.
        try mock.call("AddMethod", "sssss", ["org.ariata.Test", "Advertise", "", "", """
            adapter = objects['\(adapterPath)']
            if getattr(self, 'in_range', True) and adapter.props['org.bluez.Adapter1']['Discovering']: self.UpdateProperties('org.bluez.Device1', {'RSSI': dbus.Int16(-60, variant_level=1)})
            \(Self.matchingMonitors(name: name))
            if getattr(self, 'in_range', True) and found and not adapter.props['org.bluez.Adapter1']['Discovering'] and abs(int(self.props['org.bluez.Device1'].get('RSSI', 127)) + 60) >= 8: self.UpdateProperties('org.bluez.Device1', {'RSSI': dbus.Int16(-60, variant_level=1)})
            if getattr(self, 'in_range', True):
                for owner, path in found: self.connection.call_async(owner, path, 'org.bluez.AdvertisementMonitor1', 'DeviceFound', 'o', [dbus.ObjectPath('\(devicePath)')], None, None)
                adapter.device_found_calls = getattr(adapter, 'device_found_calls', 0) + len(found)
            """], object: devicePath)
        try mock.call("AddMethod", "sssss", ["org.bluez.Device1", "Connect", "", "", """
            if not getattr(self, 'in_range', True): raise dbus.exceptions.DBusException('le-connection-abort-by-local', name='org.bluez.Error.Failed')
            self.UpdateProperties('org.bluez.Device1', {'Connected': dbus.Boolean(True, variant_level=1), 'ServicesResolved': dbus.Boolean(True, variant_level=1)})
            """], object: devicePath)
        try mock.call("AddMethod", "sssss", ["org.bluez.Device1", "Disconnect", "", "", """
            self.UpdateProperties('org.bluez.Device1', {'ServicesResolved': dbus.Boolean(False, variant_level=1), 'Connected': dbus.Boolean(False, variant_level=1)})
            """], object: devicePath)
        try mock.call("AddMethod", "sssss", ["org.bluez.Device1", "Pair", "", "", """
            if self.props['org.bluez.Device1']['Paired']: raise dbus.exceptions.DBusException('Already Exists', name='org.bluez.Error.AlreadyExists')
            self.UpdateProperties('org.bluez.Device1', {'Paired': dbus.Boolean(True, variant_level=1)})
            \(takeIdentity)
            """], object: devicePath)
        try mock.call("AddMethod", "sssss", ["org.ariata.Test", "SetInRange", "b", "", "self.in_range = bool(args[0])"], object: devicePath)
        if let battery {
            try mock.call("AddProperty", "ssv", ["org.bluez.Battery1", "Percentage", "y", String(battery)], object: devicePath)
        }
        try mock.call("AddObject", "ssa{sv}a(ssss)", [servicePath, "org.bluez.GattService1",
                                                     "3", "UUID", "s", Self.heartRateService, "Primary", "b", "true",
                                                     "Device", "o", devicePath, "0"])
        // StartNotify also starts a beat: while notifications are on and the strap is worn
        // (`wear`), a measurement every 300 ms, as a strap on a chest sends one a second.
        let startNotify = """
            if \(requiresPairing ? "True" : "False") and not objects['\(devicePath)'].props['org.bluez.Device1']['Paired']: raise dbus.exceptions.DBusException('Insufficient Authentication', name='org.bluez.Error.NotPermitted')
            self.UpdateProperties('org.bluez.GattCharacteristic1', {'Notifying': dbus.Boolean(True, variant_level=1)})
            from gi.repository import GLib
            def beat(c=self):
                if not c.props['org.bluez.GattCharacteristic1']['Notifying']: return False
                if getattr(c, 'worn', False): c.UpdateProperties('org.bluez.GattCharacteristic1', {'Value': dbus.Array([16, 72, 64, 3], signature='y', variant_level=1)})
                return True
            GLib.timeout_add(300, beat)
            """
        try mock.call("AddObject", "ssa{sv}a(ssss)", [characteristicPath(address), "org.bluez.GattCharacteristic1",
                                                     "5", "UUID", "s", Self.heartRateMeasurement, "Service", "o", servicePath,
                                                     "Value", "ay", "0", "Notifying", "b", "false", "Flags", "as", "1", "notify",
                                                     "2",
                                                     "StartNotify", "", "", startNotify,
                                                     "StopNotify", "", "", "self.UpdateProperties('org.bluez.GattCharacteristic1', {'Notifying': dbus.Boolean(False, variant_level=1)})"])
        try mock.call("AddMethod", "sssss", ["org.ariata.Test", "SetWorn", "b", "", "self.worn = bool(args[0])"],
                      object: characteristicPath(address))
    }

    /// The strap is worn (or taken off): while worn and notifying, it sends a heart rate
    /// of 72 bpm with one beat interval every 300 ms by itself.
    public func wear(_ address: String, _ worn: Bool = true) throws {
        try mock.call("SetWorn", "b", [worn ? "true" : "false"], interface: "org.ariata.Test",
                      object: characteristicPath(address))
    }

    /// Whether the sensor at `address` is paired (`Paired`).
    public func isPaired(_ address: String) throws -> Bool {
        let answer = try mock.call("Get", "ss", ["org.bluez.Device1", "Paired"],
                                   interface: "org.freedesktop.DBus.Properties", object: devicePath(address))
        return ((answer.first as? [String: Any])?["data"] as? Bool) ?? false
    }

    /// How often a client called Device1.Pair on the sensor at `address`.
    public func pairCalls(_ address: String) throws -> Int { try mock.calls(of: "Pair", object: devicePath(address)).count }

    /// The adapter switched off (or on) as `bluetoothctl power off` does.
    public func setPowered(_ powered: Bool) throws {
        try mock.call("UpdateProperties", "sa{sv}", ["org.bluez.Adapter1", "1", "Powered", "b", powered ? "true" : "false"],
                      object: adapterPath)
    }

    /// One notification of the Heart Rate Measurement: its bytes as the sensor sends them.
    public func notify(_ bytes: [UInt8]) throws {
        try mock.call("UpdateProperties", "sa{sv}", ["org.bluez.GattCharacteristic1", "1", "Value", "ay", String(bytes.count)]
                      + bytes.map { String($0) }, object: characteristicPath)
    }

    /// Whether notifications are on (a client called StartNotify and not StopNotify).
    public func isNotifying() throws -> Bool {
        let answer = try mock.call("Get", "ss", ["org.bluez.GattCharacteristic1", "Notifying"],
                                   interface: "org.freedesktop.DBus.Properties", object: characteristicPath)
        return ((answer.first as? [String: Any])?["data"] as? Bool) ?? false
    }

    /// Whether the sensor is connected (as `Connected` says).
    public func isConnected() throws -> Bool {
        let answer = try mock.call("Get", "ss", ["org.bluez.Device1", "Connected"],
                                   interface: "org.freedesktop.DBus.Properties", object: devicePath)
        return ((answer.first as? [String: Any])?["data"] as? Bool) ?? false
    }

    /// The sensor goes out of range (or is taken off, or its battery dies): the link drops
    /// and connecting fails until `comeBack()`.
    public func goAway() throws {
        try mock.call("SetInRange", "b", ["false"], interface: "org.ariata.Test", object: devicePath)
        try mock.call("UpdateProperties", "sa{sv}", ["org.bluez.Device1", "2", "ServicesResolved", "b", "false",
                                                     "Connected", "b", "false"], object: devicePath)
        try mock.call("UpdateProperties", "sa{sv}", ["org.bluez.GattCharacteristic1", "1", "Notifying", "b", "false"],
                      object: characteristicPath)
    }

    /// The sensor is back in range: the next Connect succeeds (BlueZ hears it only while
    /// a discovery runs: `advertise`).
    public func comeBack() throws {
        try mock.call("SetInRange", "b", ["true"], interface: "org.ariata.Test", object: devicePath)
    }

    /// One advertisement of the sensor: BlueZ updates its `RSSI` when it is in range and a
    /// discovery runs (the adapter's `Discovering`), and hears nothing otherwise.
    public func advertise() throws {
        // A sensor BlueZ does not know (it dropped an unbonded one it had not heard for a
        // while) gets its object when a discovery or a monitor hears it.
        if try !knows(sensorAddress) {
            guard try isDiscovering() || monitorHears(sensorName) else { return }
            try addSensor()
        }
        try mock.call("Advertise", interface: "org.ariata.Test", object: devicePath)
    }

    /// Whether BlueZ has an object for the device at `address`.
    public func knows(_ address: String) throws -> Bool {
        let answer = try mock.call("GetManagedObjects", interface: "org.freedesktop.DBus.ObjectManager", object: "/")
        return ((answer.first as? [String: Any])?[devicePath(address)]) != nil
    }

    // MARK: the advertisement monitor (bluetoothd with Experimental = true)

    /// python: `found`, the (owner, monitor path) of every active monitor whose patterns
    /// match a heart-rate sensor's advertisement (the Heart Rate Service in its complete
    /// 16-bit UUID list, `name` as its complete local name), with `adapter` bound.
    private static func matchingMonitors(name: String) -> String {
        let nameBytes = Array(name.utf8).map(String.init).joined(separator: ", ")
        // Plain loops: a comprehension in dbusmock's exec would not see these names.
        return """
            ad = {3: bytes([0x0d, 0x18]), 9: bytes([\(nameBytes)])}
            found = []
            for (o, a), ms in getattr(adapter, 'adv_apps', {}).items():
                for p, pats in ms:
                    for st, t, c in pats:
                        if ad.get(t, b'')[st:st + len(c)] == c:
                            found.append((o, p))
                            break
            """
    }

    /// The adapter and its `AdvertisementMonitorManager1` made in one step of the mock's
    /// loop, as bluetoothd registers both in one go: a client never sees the adapter
    /// without the manager.
    private func addAdapterWithMonitorManager() throws {
        let manager = "org.bluez.AdvertisementMonitorManager1"
        // dbusmock hands a method no sender: it is the message dbus-python is dispatching.
        let caller = """
            import sys
            f = sys._getframe()
            while f is not None and not hasattr(f.f_locals.get('message'), 'get_sender'): f = f.f_back
            owner = f.f_locals['message'].get_sender()
            app = str(args[0])
            apps = self.__dict__.setdefault('adv_apps', {})

            """
        let register = caller + """
            if (owner, app) in apps: raise dbus.exceptions.DBusException('Already Exists', name='org.bluez.Error.AlreadyExists')
            tree = self.connection.call_blocking(owner, app, 'org.freedesktop.DBus.ObjectManager', 'GetManagedObjects', '', [])
            monitors = []
            for path, interfaces in tree.items():
                m = interfaces.get('org.bluez.AdvertisementMonitor1')
                if m is None or not str(path).startswith(app + '/'): continue
                if str(m.get('Type', '')) != 'or_patterns' or len(m.get('Patterns', [])) == 0:
                    self.connection.call_async(owner, str(path), 'org.bluez.AdvertisementMonitor1', 'Release', '', [], None, None)
                    continue
                monitors.append((str(path), [(int(p[0]), int(p[1]), bytes(p[2])) for p in m['Patterns']]))
            apps[(owner, app)] = monitors
            from gi.repository import GLib
            def activate(c=self.connection, owner=owner, monitors=monitors):
                for path, _ in monitors: c.call_async(owner, path, 'org.bluez.AdvertisementMonitor1', 'Activate', '', [], None, None)
                return False
            GLib.idle_add(activate)
            """
        let unregister = caller + """
            if (owner, app) not in apps: raise dbus.exceptions.DBusException('Does Not Exist', name='org.bluez.Error.DoesNotExist')
            for path, _ in apps.pop((owner, app)): self.connection.call_async(owner, path, 'org.bluez.AdvertisementMonitor1', 'Release', '', [], None, None)
            """
        try mock.call("AddMethod", "sssss", ["org.ariata.Test", "AddAdapterWithMonitorManager", "", "", """
            path = self.AddAdapter('\(Self.adapter)', 'ariata-test')
            adapter = objects[path]
            adapter.AddProperties('\(manager)', {'SupportedMonitorTypes': dbus.Array(['or_patterns'], signature='s'), 'SupportedFeatures': dbus.Array([], signature='s')})
            adapter.AddMethod('\(manager)', 'RegisterMonitor', 'o', '', \(Self.pythonString(register)))
            adapter.AddMethod('\(manager)', 'UnregisterMonitor', 'o', '', \(Self.pythonString(unregister)))
            self.EmitSignal('org.freedesktop.DBus.ObjectManager', 'InterfacesAdded', 'oa{sa{sv}}', [dbus.ObjectPath(path), {'\(manager)': adapter.props['\(manager)']}])
            """])
        try mock.call("AddAdapterWithMonitorManager", interface: "org.ariata.Test")
        try mock.call("AddMethod", "sssss", ["org.ariata.Test", "MonitorHears", "ay", "b", """
            adapter = self
            \(Self.matchingMonitors(name: "").replacingOccurrences(of: "9: bytes([])", with: "9: bytes(args[0])"))
            ret = len(found) > 0
            """], object: adapterPath)
        try mock.call("AddMethod", "sssss", ["org.ariata.Test", "MonitorCounts", "", "ii", """
            ret = (sum(len(ms) for ms in getattr(self, 'adv_apps', {}).values()), getattr(self, 'device_found_calls', 0))
            """], object: adapterPath)
    }

    /// `text` as a Python string literal (a JSON string is one).
    private static func pythonString(_ text: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])) ?? Data("[\"\"]".utf8)
        return String(String(decoding: data, as: UTF8.self).dropFirst().dropLast())
    }

    /// Whether a registered monitor matches a heart-rate sensor advertising as `name`.
    private func monitorHears(_ name: String) throws -> Bool {
        guard advertisementMonitor else { return false }
        let answer = try mock.call("MonitorHears", "ay", [String(name.utf8.count)] + name.utf8.map { String($0) },
                                   interface: "org.ariata.Test", object: adapterPath)
        return answer.first as? Bool ?? false
    }

    /// The monitors registered now, and how often BlueZ called a monitor's DeviceFound.
    public func monitors() throws -> (registered: Int, deviceFoundCalls: Int) {
        guard advertisementMonitor else { return (0, 0) }
        let answer = try mock.call("MonitorCounts", interface: "org.ariata.Test", object: adapterPath)
        return ((answer.first as? NSNumber)?.intValue ?? 0, (answer.dropFirst().first as? NSNumber)?.intValue ?? 0)
    }

    /// The sensor's object goes (InterfacesRemoved), as bluetoothd removes a device it
    /// has not heard for a while, or after `bluetoothctl remove`.
    public func removeSensor() throws {
        _ = try? mock.call("RemoveObject", "s", [characteristicPath])
        _ = try? mock.call("RemoveObject", "s", [servicePath])
        try mock.call("RemoveDevice", "o", [devicePath], interface: "org.bluez.Adapter1", object: adapterPath)
    }

    /// The strap comes back under another address (a battery swap or a firmware update
    /// gives a random static address a new value): its object goes (`removeSensor`) and
    /// the same name appears under `newAddress` (InterfacesAdded), as BlueZ adds it when
    /// a discovery hears it. `afterRemoval` runs between the two (a test waits there for
    /// the discovery that hears it).
    public func moveSensor(to newAddress: String, afterRemoval: () throws -> Void = {}) throws {
        try removeSensor()
        try afterRemoval()
        sensorAddress = newAddress
        try addSensor(address: newAddress, name: sensorName, battery: battery)
    }

    /// Whether the adapter is discovering now (someone's StartDiscovery runs).
    public func isDiscovering() throws -> Bool {
        let answer = try mock.call("Get", "ss", ["org.bluez.Adapter1", "Discovering"],
                                   interface: "org.freedesktop.DBus.Properties", object: adapterPath)
        return ((answer.first as? [String: Any])?["data"] as? Bool) ?? false
    }

    public func setBattery(_ percentage: Int) throws {
        try mock.call("UpdateProperties", "sa{sv}", ["org.bluez.Battery1", "1", "Percentage", "y", String(percentage)], object: devicePath)
    }

    /// How often a client called Device1.Connect.
    public func connectCalls() throws -> Int { try mock.calls(of: "Connect", object: devicePath).count }

    /// The adapter's calls of `method` (StartDiscovery, SetDiscoveryFilter, …), oldest first.
    public func adapterCalls(of method: String) throws -> [[Any]] { try mock.calls(of: method, object: adapterPath) }
}
