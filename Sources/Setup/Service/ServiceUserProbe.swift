import AgentCore
import Capture
import Foundation

/// Is the service user in the groups its devices need (`audio` for the microphone,
/// `dialout` for serial ports)?
struct ServiceUserProbe {
    let user: String
    let config: AgentConfig

    func checks() -> [DeviceCheck] {
        guard let entry = getpwnam(user) else {
            return [DeviceCheck(name: "service user \(user)", outcome: .warning,
                                detail: "does not exist (fine when the agent runs as yourself, e.g. as a user service)",
                                fix: "sudo make install creates it")]
        }
        let primary = entry.pointee.pw_gid
        var needed: [(group: String, stream: StreamName)] = []
        // Through a sound server of the user's own session the server opens the card,
        // not the agent: no group needed.
        let viaSoundServer = SoundCardGuard.card(of: config.microphone.device) == nil
            && !SoundServerSession.find(runtimeDirectory: SoundServerSession.runtimeDirectory(uid: entry.pointee.pw_uid)).isEmpty
        if config.microphone.enabled && !viaSoundServer { needed.append(("audio", .microphone)) }
        if config.health.enabled {
            for group in HealthSourceKinds.serviceUserGroups(config.health.sources) { needed.append((group, .health)) }
        }
        return needed.map { group, stream in
            let name = "service user \(user) in group \(group)"
            guard let g = getgrnam(group) else {
                return DeviceCheck(name: name, stream: stream, outcome: .warning, detail: "there is no group \(group) on this system")
            }
            var isMember = g.pointee.gr_gid == primary
            var member = g.pointee.gr_mem
            while !isMember, let m = member?.pointee {
                if String(cString: m) == user { isMember = true }
                member = member?.advanced(by: 1)
            }
            if isMember {
                return DeviceCheck(name: name, stream: stream, outcome: .ok, detail: "yes")
            }
            return DeviceCheck(name: name, stream: stream, outcome: .failed, detail: "no: it cannot open the \(stream.rawValue) devices",
                               fix: "sudo usermod -aG \(group) \(user)")
        }
    }
}
