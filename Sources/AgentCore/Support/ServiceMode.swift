import Foundation

/// Whether the agent runs as the system service (its own user `ariata`, no desktop) or as
/// a person's user service (inside their session, with its desktop's services). The units
/// say it (`Environment=ARIATA_SERVICE_MODE=`); run by hand, root and the `ariata` user
/// count as the system service and anyone else as a user service (docs/laptop.md).
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
