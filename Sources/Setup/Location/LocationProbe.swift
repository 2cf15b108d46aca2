import AgentCore
import Capture
import DBus
import Foundation
import Reports

/// Where will fixes come from? The same choice the location stream makes
/// (`[location] source`, by `LocationSourceChooser`'s rule for `auto`): gpsd when it has a
/// receiver, GeoClue otherwise (docs/laptop.md).
struct LocationProbe {
    let config: LocationConfig
    let gpsdTimeout: TimeInterval
    let mode: ServiceMode
    let whitelist: GeoClueAgentWhitelist
    /// How long to wait for a real fix from GeoClue.
    var fixTimeout: TimeInterval = 30

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
            let diagnosis = GeoClueDiagnosis(files: whitelist, hasWPASupplicant: GeoClueDiagnosis.wpaSupplicantPresent(on: bus))
            return takeFix(name: name, prefix: prefix + "fixes from GeoClue (best accuracy now: \(Self.levelName(level.int ?? 0))); \(agent); ",
                           diagnosis: diagnosis)
        } catch where error.isServiceMissing {
            return DeviceCheck(name: name, stream: .location, outcome: .failed, detail: prefix + "GeoClue is not installed",
                               fix: "sudo apt install geoclue-2.0 (or attach a GPS receiver to gpsd)")
        } catch {
            return DeviceCheck(name: name, stream: .location, outcome: .failed, detail: prefix + "cannot ask GeoClue: \(error)",
                               fix: "check that dbus runs (systemctl status dbus) and geoclue-2.0 is installed")
        }
    }

    /// A real fix, as the stream would get it: its accuracy and how it was made, and when
    /// none comes or it is over `max_accuracy`, the cause with its fix.
    private func takeFix(name: String, prefix: String, diagnosis: GeoClueDiagnosis) -> DeviceCheck {
        let started = Date()
        let fix: LocationFix?
        do {
            fix = try GeoClueFixProbe.firstFix(accuracy: config.accuracyLevel, actsAsItsOwnAgent: mode == .system, timeout: fixTimeout)
        } catch .noDesktopAgent {
            return DeviceCheck(name: name, stream: .location, outcome: .failed, detail: prefix + GeoClueDiagnosis.noDesktopAgent.detail,
                               fix: GeoClueDiagnosis.noDesktopAgent.fix)
        } catch {
            return DeviceCheck(name: name, stream: .location, outcome: .failed, detail: prefix + error.description,
                               fix: "see docs/laptop.md, \"When GeoClue is absent, refuses, or says nothing\"")
        }
        let causes = diagnosis.causes()
        guard let fix else {
            let cause = causes.first
            return DeviceCheck(name: name, stream: .location, outcome: .failed,
                               detail: prefix + "no fix from GeoClue in \(Int(fixTimeout)) s" + (cause.map { ": \($0.detail)" } ?? ""),
                               fix: cause?.fix ?? "check that Wi-Fi is on and that GeoClue's sources are enabled in \(whitelist.mainFile) (docs/laptop.md)")
        }
        let took = Int(Date().timeIntervalSince(started).rounded())
        let what = Self.describe(fix)
        if config.maxAccuracy > 0, let accuracy = fix.horizontalAccuracy, accuracy > Double(config.maxAccuracy) {
            let cause = causes.first ?? diagnosis.unknownPlaceCause(maxAccuracy: config.maxAccuracy)
            return DeviceCheck(name: name, stream: .location, outcome: .failed,
                               detail: prefix + "a fix in \(took) s, but \(what), over max_accuracy \(config.maxAccuracy) m, so none would be written: \(cause.detail)",
                               fix: cause.fix)
        }
        return DeviceCheck(name: name, stream: .location, outcome: .ok, detail: prefix + "a fix in \(took) s: \(what)")
    }

    /// The fix's accuracy and how it was made, in the words `status` uses.
    static func describe(_ fix: LocationFix) -> String {
        let accuracy = fix.horizontalAccuracy.map(StatusText.distance)
        guard let method = fix.method else {
            return "accuracy \(accuracy ?? "not given")" + ", GeoClue does not say how it was made"
        }
        let inferred = method.basis == .accuracy ? " (inferred from its accuracy: GeoClue does not say)" : ""
        switch method.kind {
        case .ip: return "only an IP-address lookup, \(accuracy ?? "accuracy not given")\(inferred)"
        case .wifi: return "accuracy \(accuracy ?? "not given"), from Wi-Fi\(inferred)"
        case .cell: return "accuracy \(accuracy ?? "not given"), from the cell towers\(inferred)"
        case .gnss: return "accuracy \(accuracy ?? "not given"), from satellites\(inferred)"
        case .static: return "GeoClue's static location, accuracy \(accuracy ?? "not given")"
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
