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

    public func pair(address: String) -> Result<Void, BLESetupFailure> {
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
        return .success(())
    }
}
