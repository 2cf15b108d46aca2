/// Why a Bluetooth LE sensor gives no readings, worded for `status` with what to do
/// (docs/streams/health.md#bluetooth-le-sensors).
enum BlueZProblem: Error, Equatable, Sendable, CustomStringConvertible {
    case noBus(String)
    case notRunning
    case accessDenied(String)
    case noAdapter
    case adapterOff(String)
    case notFound(BLESensorTarget)
    case connectFailed(BLESensorTarget, String)
    case noHeartRateService(BLESensorTarget)
    case needsPairing(BLESensorTarget, String)
    case disconnected(BLESensorTarget)
    /// Connected, and no notification for this many seconds.
    case silent(BLESensorTarget, address: String, seconds: Int)
    case failed(String)

    var description: String {
        switch self {
        case .noBus(let detail):
            return "cannot reach the system bus for BlueZ (\(detail)); is dbus running?"
        case .notRunning:
            return "BlueZ is not on the system bus: install bluez and start it (sudo apt install bluez; sudo systemctl start bluetooth); retrying"
        case .accessDenied(let detail):
            return "BlueZ refuses the agent (\(detail)): add the service user to the bluetooth group (sudo usermod -aG bluetooth ariata) and restart the agent"
        case .noAdapter:
            return "no Bluetooth adapter: plug one in, or unblock it (rfkill unblock bluetooth); retrying"
        case .adapterOff(let adapter):
            return "Bluetooth adapter \(adapter) is powered off: turn it on (bluetoothctl power on, or the desktop's Bluetooth switch); retrying"
        case .notFound(let target):
            return "heart-rate sensor \(target) not found nearby (out of range, not worn, or its battery flat?); still looking"
        case .connectFailed(let target, let detail):
            return "cannot connect to heart-rate sensor \(target) (\(detail)): out of range, not worn, or its battery flat?; retrying"
        case .noHeartRateService(let target):
            return "\(target) has no Heart Rate Service (0x180D): is it a heart-rate sensor? correct [[health.source]] address (bluetoothctl --timeout 10 scan on lists the devices nearby)"
        case .needsPairing(let target, let detail):
            return "heart-rate sensor \(target) asks to be paired (\(detail)): pair it once with bluetoothctl pair \(target), then it is taken up by itself"
        case .disconnected(let target):
            return "heart-rate sensor \(target) disconnected (out of range, taken off, or its battery flat?); reconnecting"
        case .silent(let target, let address, let seconds):
            return "heart-rate sensor \(target) is connected but sent no heart rate for \(seconds) s: if it is worn, BlueZ's copy of its services may be stale (after a firmware update): run 'bluetoothctl remove \(address)', then 'ariata-agent onboard --ble-scan' to pair it again"
        case .failed(let detail):
            return "BlueZ failed: \(detail)"
        }
    }
}

extension BlueZProblem {
    var asksForPairing: Bool {
        if case .needsPairing = self { return true }
        return false
    }
}
