import AgentCore
import Capture
import DBus
import Foundation

/// Onboarding's set-up of a Bluetooth LE heart-rate sensor (docs/streams/health.md,
/// "Setting a sensor up with onboard"): a short discovery filtered on the Heart Rate
/// Service, the sensors heard listed with name, address and signal strength, the one
/// chosen checked with the source's own probe (paired first when it refuses
/// notifications unpaired), and one `[[health.source]] kind = "ble"` added or updated.
/// `--ble-sensor` names the sensor without a scan; on a terminal the scan is offered
/// when health is on; `--ble-scan` scans without asking; `--yes` alone never scans.
struct BLESensorStep {
    /// `--ble-sensor`, as BlueZ writes an address.
    var requested: String?
    /// `--ble-scan`.
    var scanRequested: Bool
    var scanSeconds: TimeInterval
    var prompter: any Prompter
    var console: Console
    var printer: CheckPrinter
    /// Where BlueZ is (the system bus; a test's private one through DBUS_SYSTEM_BUS_ADDRESS).
    var bus: DBusBus = .system

    func run(_ health: inout HealthConfig) throws {
        let sensor: BLESensorSighting
        if let requested {
            console.line("  heart-rate sensor \(requested) (--ble-sensor)")
            let known = Self.sensors(in: health).first { $0.address == requested }
            sensor = BLESensorSighting(address: requested, name: known?.name ?? "", rssi: nil, paired: false)
        } else {
            guard scanRequested || (health.enabled && prompter.isInteractive) else { return }
            if !scanRequested, try !prompter.confirm("  Scan for a Bluetooth heart-rate sensor?", default: false) { return }
            guard let chosen = try scanAndChoose() else { return }
            sensor = chosen
        }
        guard let found = try setUp(sensor) else { return }
        add(address: found.address, name: found.name, addressType: found.addressType, replacing: sensor.address, to: &health)
    }

    // MARK: Scan and choice

    private func scanAndChoose() throws -> BLESensorSighting? {
        console.line("  Scanning for Bluetooth LE heart-rate sensors for \(Int(scanSeconds)) s (wear yours: a strap wakes when its electrodes touch wet skin)…")
        let sensors: [BLESensorSighting]
        switch BLESensorScan(bus: bus, seconds: scanSeconds).run() {
        case .success(let found): sensors = found
        case .failure(let failure):
            console.line("  cannot scan: \(failure)")
            return nil
        }
        guard !sensors.isEmpty else {
            console.line("  no heart-rate sensor heard in \(Int(scanSeconds)) s: wake the strap (wet its electrodes and put it on), disconnect it from a phone or watch it is connected to, and run onboard again with --ble-scan (or name it with --ble-sensor ADDRESS)")
            return nil
        }
        list(sensors)
        // One sensor heard is the default (and what --yes --ble-scan takes); of several,
        // none is chosen without a person: it may be a neighbour's.
        let fallback = sensors.count == 1 ? "1" : "none"
        while true {
            let answer = try prompter.ask("  Heart-rate sensor (a number from the list, or none)", default: fallback)
            if ["none", "no", "n", "0"].contains(answer.lowercased()) {
                console.line("  no sensor set up (onboard --ble-scan offers it again)")
                return nil
            }
            if let number = Int(answer), sensors.indices.contains(number - 1) { return sensors[number - 1] }
            if let address = BLESourceSettings.bluetoothAddress(answer), let sensor = sensors.first(where: { $0.address == address }) {
                return sensor
            }
            guard prompter.isInteractive else { return nil }
            console.line("  there is no sensor \(answer): give a number from 1 to \(sensors.count), or none")
        }
    }

    private func list(_ sensors: [BLESensorSighting]) {
        console.line("  Heart-rate sensors heard:")
        let numberWidth = String(sensors.count).count
        let nameWidth = sensors.map(\.name.count).max() ?? 0
        for (number, sensor) in zip(1..., sensors) {
            let signal = sensor.rssi.map { "\($0) dBm" } ?? "not heard now"
            console.line("    \(pad(String(number), numberWidth))  \(pad(sensor.name, nameWidth))  \(sensor.address)  \(signal)\(sensor.paired ? "  (paired)" : "")")
        }
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0)
    }

    // MARK: Pairing and the check

    /// Checks that the sensor notifies, pairing it first when it asks to be; what to write
    /// (its advertised name, and the address BlueZ has it under after pairing, with its
    /// type), or nil when it is not to be written.
    private func setUp(_ sensor: BLESensorSighting) throws -> (name: String, address: String, addressType: BLEAddressType?)? {
        let label = sensor.name.isEmpty ? sensor.address : "\(sensor.name) (\(sensor.address))"
        console.line("  connecting to \(label) and waiting for a heart rate…")
        let probe = BLESensorProbe(target: BLESensorTarget(address: sensor.address, name: nil), bus: bus)
        var result = probe.run()
        var address = sensor.address
        if case .failure(let failure) = result, failure.needsPairing, !sensor.paired {
            console.line("  \(sensor.address) refuses notifications until it is paired: pairing…")
            switch BLESensorPairing(bus: bus).pair(address: sensor.address) {
            case .success(let identity):
                // A sensor bonded from a private address is known by its identity address
                // from now on: that is the one to write.
                if identity.address != sensor.address {
                    console.line("  paired with \(sensor.address), known from now on as \(identity.address)")
                    address = identity.address
                } else {
                    console.line("  paired with \(sensor.address)")
                }
                result = BLESensorProbe(target: BLESensorTarget(address: address, name: nil), bus: bus).run()
            case .failure(let pairing):
                result = .failure(BLESensorProbe.ProbeFailure(description: pairing.description))
            }
        }
        let check = BLESourceKind.check(result, name: "heart-rate sensor \(label)")
        console.write(printer.render(check))
        let reading = try? result.get()
        let advertised = reading?.name ?? sensor.name
        if check.outcome == .failed {
            // Named on the command line: written anyway (the agent connects once it
            // notifies); a sensor picked from a scan is written only when a person says so.
            let keep = try prompter.confirm("  Write it to the configuration anyway? The agent keeps connecting to it until it notifies",
                                            default: requested != nil)
            guard keep else {
                console.line("  \(sensor.address) not set up")
                return nil
            }
        }
        return (advertised, reading?.address ?? address, reading?.addressType)
    }

    // MARK: The source

    /// Adds the sensor as a source, or updates the one with its address; health is
    /// switched on with it.
    /// `replacing`: the address the sensor was chosen by (before pairing gave it another).
    private func add(address: String, name: String, addressType: BLEAddressType?, replacing: String, to health: inout HealthConfig) {
        let source = BLESourceSettings(address: address, name: name.isEmpty ? nil : name, addressType: addressType)
        if let index = health.sources.firstIndex(where: {
            if case .ble(let ble) = $0 { ble.address == address || ble.address == replacing } else { false }
        }) {
            health.sources[index] = .ble(source)
        } else {
            health.sources.append(.ble(source))
        }
        console.line("  health source: kind = \"ble\", address = \"\(address)\", name = \"\(source.name)\""
                     + (addressType.map { ", address_type = \"\($0.rawValue)\"" } ?? ""))
        let others = Self.sensors(in: health).filter { $0.address != address && $0.address != replacing }
        if !others.isEmpty {
            console.line("  also configured: \(others.map { $0.address ?? $0.name }.joined(separator: ", ")) (remove its [[health.source]] if it is gone)")
        }
        if !health.enabled {
            health.enabled = true
            console.line("  health switched on ([health] enabled = true)")
        }
    }

    /// The Bluetooth LE sources already configured.
    private static func sensors(in health: HealthConfig) -> [BLESourceSettings] {
        health.sources.compactMap { if case .ble(let ble) = $0 { ble } else { nil } }
    }
}
