import AgentCore
import Capture
import Foundation

/// Is gpsd there? Connects the way the location stream does (`GPSDClient`) and reads the
/// VERSION banner every gpsd sends first.
struct GPSDProbe {
    let host: String
    let port: Int
    let timeout: TimeInterval

    func check() -> DeviceCheck {
        let name = "gpsd at \(host):\(port)"
        let reason: String
        do {
            switch try GPSDClient.greeting(host: host, port: port, timeout: timeout) {
            case .gpsd(let release):
                return DeviceCheck(name: name, stream: .location, outcome: .ok, detail: "gpsd \(release.isEmpty ? "?" : release) answers")
            case .notGPSD:
                return DeviceCheck(name: name, stream: .location, outcome: .failed,
                                   detail: "something answers on that port but it is not gpsd",
                                   fix: "set [location] gpsd_host and gpsd_port to where gpsd listens")
            case .silent:
                reason = "no answer within \(Int(timeout.rounded(.up))) s"
            }
        } catch {
            reason = error.detail
        }
        return DeviceCheck(name: name, stream: .location, outcome: .failed, detail: "cannot reach gpsd: \(reason)",
                           fix: "sudo apt install gpsd && sudo systemctl enable --now gpsd.socket (and set the GPS device in /etc/default/gpsd)")
    }
}
