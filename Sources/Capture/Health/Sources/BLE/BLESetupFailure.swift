/// Why onboarding cannot scan for, pair or check a heart-rate sensor, worded for the
/// person at the terminal (the daemon's wording in `BlueZProblem` speaks of retrying,
/// which onboarding does not do).
public struct BLESetupFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }

    init(_ problem: BlueZProblem) {
        switch problem {
        case .noBus(let detail):
            description = "cannot reach the system bus (\(detail)): is dbus running?"
        case .notRunning:
            description = "bluetoothd is not running (BlueZ is not on the system bus): sudo apt install bluez && sudo systemctl enable --now bluetooth"
        case .accessDenied(let detail):
            description = "BlueZ refuses this user (\(detail)): run onboard with sudo, or as a member of the bluetooth group"
        case .noAdapter:
            description = "no Bluetooth adapter: plug one in, or unblock it (rfkill unblock bluetooth)"
        case .adapterOff(let adapter):
            description = "Bluetooth adapter \(adapter) is powered off: turn it on with 'bluetoothctl power on' (or the desktop's Bluetooth switch), then run onboard again"
        default:
            description = problem.description
        }
    }
}
