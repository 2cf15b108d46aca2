import AgentCore
import Capture
import DBus
import Foundation

/// Where will fixes come from? The same choice the location stream makes
/// (`[location] source`, by `LocationSourceChooser`'s rule for `auto`): gpsd when it has a
/// receiver, GeoClue otherwise (docs/laptop.md).
struct LocationProbe {
    let config: LocationConfig
    let gpsdTimeout: TimeInterval
    let mode: ServiceMode
    let whitelist: GeoClueAgentWhitelist

    func check() -> DeviceCheck {
        let gpsd = GPSDProbe(host: config.gpsdHost, port: config.gpsdPort, timeout: gpsdTimeout)
        switch config.source {
        case .gpsd:
            return gpsd.check()
        case .geoclue:
            return geoClue(because: nil)
        case .auto:
            let receivers = (try? GPSDClient.receiverCount(host: config.gpsdHost, port: config.gpsdPort, timeout: gpsdTimeout)) ?? nil
            if let receivers, LocationSourceChooser.autoTakesGPSD(receivers: receivers) {
                var check = gpsd.check()
                check.detail += " with \(receivers) receiver\(receivers == 1 ? "" : "s"): fixes from gpsd"
                return check
            }
            let why = receivers == nil ? "no gpsd at \(config.gpsdHost):\(config.gpsdPort)" : "gpsd has no receiver"
            return geoClue(because: why)
        }
    }

    private func geoClue(because why: String?) -> DeviceCheck {
        let name = "GeoClue (location from Wi-Fi and the system's other sources)"
        let prefix = why.map { "\($0); " } ?? ""
        do {
            let bus = try DBusConnection(.system, threadName: "ariata-probe")
            defer { bus.close() }
            let level = try bus.property("AvailableAccuracyLevel", of: "org.freedesktop.GeoClue2.Manager",
                                         at: GeoClueSession.managerPath, on: GeoClueSession.service, timeout: 10)
            if mode == .system && !whitelist.allowsTheAgent {
                return DeviceCheck(name: name, stream: .location, outcome: .failed,
                                   detail: prefix + "GeoClue answers but does not let ariata-agent act as its own agent (the system service has no desktop to do it)",
                                   fix: whitelist.remedy)
            }
            let agent = mode == .system ? "the agent is its own GeoClue agent" : "the desktop's location switch decides"
            return DeviceCheck(name: name, stream: .location, outcome: .ok,
                               detail: prefix + "fixes from GeoClue (best accuracy now: \(Self.levelName(level.int ?? 0))); \(agent)")
        } catch where error.isServiceMissing {
            return DeviceCheck(name: name, stream: .location, outcome: .failed, detail: prefix + "GeoClue is not installed",
                               fix: "sudo apt install geoclue-2.0 (or attach a GPS receiver to gpsd)")
        } catch {
            return DeviceCheck(name: name, stream: .location, outcome: .failed, detail: prefix + "cannot ask GeoClue: \(error)",
                               fix: "check that dbus runs (systemctl status dbus) and geoclue-2.0 is installed")
        }
    }

    static func levelName(_ level: Int) -> String {
        switch level {
        case 8...: "exact"
        case 6...7: "street"
        case 5: "neighborhood"
        case 4: "city"
        case 1...3: "country"
        default: "none (no source can locate this machine now)"
        }
    }
}
