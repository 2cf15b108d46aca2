/// A Bluetooth LE heart-rate sensor (`kind = "ble"`): the one at `address`, or the one
/// advertising `name`.
public struct BLESourceSettings: HealthSourceKindSettings {
    public static let kind = HealthSourceKindName.ble

    /// The sensor's address (`A0:9E:1A:12:34:56`, upper case), when given.
    public var address: String?
    /// The name the sensor advertises (onboard writes it), also the source's name in the
    /// records. Without an `address` the sensor advertising it is looked for; with one,
    /// it is looked for when BlueZ no longer knows the address (a strap whose random
    /// address changed). `ble:<address>` when not given.
    public var name: String
    /// How the sensor's address is kept (BlueZ's `AddressType`, written by onboard): a
    /// `random` one may change with a battery swap or a firmware update.
    public var addressType: BLEAddressType?

    public init(address: String?, name: String? = nil, addressType: BLEAddressType? = nil) {
        self.address = address
        self.name = name ?? address.map { "ble:\($0)" } ?? ""
        self.addressType = addressType
    }

    /// The advertised name to look for, nil when none was given (the default `ble:…` name).
    public var advertisedName: String? {
        name.isEmpty || address.map({ name == "ble:\($0)" }) == true ? nil : name
    }

    public var settings: HealthSourceSettings { .ble(self) }

    /// A Bluetooth address as BlueZ writes it (six hex pairs, upper case), or nil.
    public static func bluetoothAddress(_ text: String) -> String? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6, parts.allSatisfy({ $0.utf8.count == 2 && $0.allSatisfy(\.isHexDigit) }) else { return nil }
        return text.uppercased()
    }
}

/// BlueZ's `AddressType` of a Bluetooth LE device.
public enum BLEAddressType: String, Sendable, Equatable, Codable {
    case `public`
    case random
}

extension HealthSourceKindName {
    public static let ble = HealthSourceKindName(rawValue: "ble")
}

extension BLESourceSettings: HealthSourceKindTable {
    static var defaults: Self { Self(address: nil) }
    static var keys: [ConfigKey<Self>] {
        [ConfigKey("name", read: { s, t in t.name = try s.optionalString("name") ?? "" }, write: { $0.name }),
         ConfigKey("address", read: { s, t in
             guard let text = try s.optionalString("address") else { return }
             guard let address = BLESourceSettings.bluetoothAddress(text) else {
                 throw s.error("address", "\"\(text)\" is not a Bluetooth address: give six hex pairs such as \"A0:9E:1A:12:34:56\" (bluetoothctl --timeout 10 scan on lists the sensors nearby)")
             }
             t.address = address
         }, write: { $0.address }),
         ConfigKey("address_type", read: { s, t in
             guard let text = try s.optionalString("address_type") else { return }
             guard let type = BLEAddressType(rawValue: text) else {
                 throw s.error("address_type", "\"\(text)\" is not an address type: give \"public\" or \"random\" (bluetoothctl info <address> shows it), or leave it out")
             }
             t.addressType = type
         }, write: { $0.addressType?.rawValue })]
    }

    mutating func validate(_ s: ConfigSection) throws {
        if try s.optionalString("path") != nil {
            throw s.error("path", "a kind = \"ble\" source has no path: give address = \"A0:9E:1A:12:34:56\" (or name)")
        }
        if address == nil && name.isEmpty {
            throw s.error("address", "missing: give the sensor's address = \"A0:9E:1A:12:34:56\" or its advertised name = \"Polar H10 12345678\" (bluetoothctl --timeout 10 scan on lists the sensors nearby)")
        }
        if name.isEmpty, let address { name = "ble:\(address)" }
    }
}
