import AgentCore
import DBus
import Foundation

/// Pairs (bonds) a sensor BlueZ knows, with `Device1.Pair`. Onboarding calls it only when
/// the sensor refused notifications unpaired: the Heart Rate Service of most straps is
/// open. No agent is registered, so bluetoothd pairs "Just Works" (no passkey); a sensor
/// that shows or asks for a passkey is paired with bluetoothctl instead (the failure says so).
public struct BLESensorPairing: Sendable {
    public var bus: DBusBus
    /// How long `Pair` may take (bluetoothd's own limit is about as long).
    public var timeout: TimeInterval = 30

    public init(bus: DBusBus = .system) {
        self.bus = bus
    }

    /// Pairs the sensor at `address`; the address BlueZ has it under afterwards (its
    /// identity address, which a sensor bonded from a private address takes on pairing)
    /// and its `AddressType`.
    public func pair(address: String) -> Result<(address: String, type: BLEAddressType?), BLESetupFailure> {
        let connection: DBusConnection
        do {
            connection = try BlueZ.connect(bus)
        } catch {
            return .failure(BLESetupFailure(error))
        }
        defer { connection.close() }
        let target = BLESensorTarget(address: address, name: nil)
        let path: String
        do {
            guard let device = try BlueZObjects.fetch(connection).device(target) else {
                return .failure(BLESetupFailure(.notFound(target)))
            }
            path = device.path
        } catch {
            return .failure(BLESetupFailure(error))
        }
        do {
            _ = try connection.call(DBusMethodCall(destination: BlueZ.service, path: path, interface: BlueZ.device, member: "Pair"),
                                    timeout: timeout)
        } catch let error where error.remoteName == "org.bluez.Error.AlreadyExists" {
            // Paired meanwhile (bluetoothctl, the desktop): as good.
        } catch let error where error.remoteName?.hasPrefix("org.bluez.Error.Authentication") == true {
            return .failure(BLESetupFailure("pairing with \(address) was refused (\(error.description)): a sensor that shows or asks for a passkey is paired once with 'bluetoothctl pair \(address)', then run onboard again"))
        } catch {
            return .failure(BLESetupFailure(BlueZSensorSession.problem(error, connecting: target)))
        }
        let device = (try? BlueZObjects.fetch(connection))?.objects[path]?[BlueZ.device]
        let identity = device?["Address"]?.string.flatMap(BLESourceSettings.bluetoothAddress) ?? address
        return .success((identity, device?["AddressType"]?.string.flatMap(BLEAddressType.init(rawValue:))))
    }
}
