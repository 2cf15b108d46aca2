import Foundation

/// How the agent runs: the system service (user `ariata`, `/etc/ariata/agent.toml`; a
/// headless board) or the user service of the person logged in (`systemctl --user`,
/// `~/.config/ariata/agent.toml`; a laptop or desktop, where the sound server, GeoClue's
/// agent and the notices serve only that person's session). docs/install.md, "Laptop or
/// board". Onboarding asks; the running daemon reads it from its unit
/// (`Environment=ARIATA_SERVICE_MODE=`); run by hand, root and the `ariata` user count as
/// the system service and anyone else as a user service (docs/laptop.md).
public enum ServiceMode: String, Sendable, Equatable {
    case system
    case user

    public static let environmentVariable = "ARIATA_SERVICE_MODE"

    public static func current(environment: [String: String] = ProcessInfo.processInfo.environment,
                               userID: uid_t = geteuid(), userName: String? = nil) -> ServiceMode {
        if let stated = environment[environmentVariable].flatMap(ServiceMode.init(rawValue:)) { return stated }
        if userID == 0 { return .system }
        let name = userName ?? getpwuid(userID).flatMap { $0.pointee.pw_name.map { String(cString: $0) } }
        return name == "ariata" ? .system : .user
    }
}
