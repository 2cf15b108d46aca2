import AgentCore
import Capture
import Foundation

/// Where a user service keeps its files: what the user unit reads
/// (`systemd/user/ariata-agent.service`: `%E/ariata/agent.toml`).
public struct UserServicePaths: Sendable, Equatable {
    public var config: String
    public var database: String

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? getpwuid(getuid()).map { String(cString: $0.pointee.pw_dir) } ?? "/"
        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "\(home)/.config"
        let stateHome = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "\(home)/.local/state"
        config = "\(configHome)/ariata/agent.toml"
        database = "\(stateHome)/ariata/agent.sqlite"
    }
}

/// Onboarding's first decision: a desktop sound server (a PipeWire or PulseAudio session
/// of the person running onboard) means a laptop or desktop, where the agent should run
/// as that person's user service; without one, the system service. `--user-service` and
/// `--system-service` decide without asking.
struct ServiceModeStep {
    let request: OnboardRequest
    let prompter: any Prompter
    let console: Console
    var environment = ProcessInfo.processInfo.environment

    /// The person at the keyboard: sudo's caller when run through sudo.
    var person: (name: String, uid: uid_t) {
        if getuid() == 0, let name = environment["SUDO_USER"], !name.isEmpty, let entry = getpwnam(name) {
            return (name, entry.pointee.pw_uid)
        }
        let name = getpwuid(getuid()).map { String(cString: $0.pointee.pw_name) } ?? "uid \(getuid())"
        return (name, getuid())
    }

    func decide() throws -> ServiceMode {
        let (name, uid) = person
        let sessions = SoundServerSession.find(runtimeDirectory: SoundServerSession.runtimeDirectory(uid: uid, environment: environment))
        let found = sessions.map { "\($0.server.rawValue) (\($0.socket))" }.joined(separator: ", ")
        if sessions.isEmpty {
            console.line("  no desktop sound server session for \(name): a board or server, the system service fits")
        } else {
            console.line("  a desktop sound server runs for \(name): \(found); it serves only \(name)'s session,")
            console.line("  so the agent records through it as \(name)'s user service (the system service cannot reach it)")
        }
        switch request.serviceMode {
        case .user?:
            guard uid == getuid() else {
                throw OnboardFailure("--user-service sets up the service of the user who runs onboard: run it as \(name), without sudo",
                                     exitCode: OnboardFailure.usage)
            }
            return .user
        case .system?:
            if !sessions.isEmpty {
                console.line("  --system-service: the system service cannot record through \(sessions[0].server.rawValue); give it a card of its own")
                console.line("  ([microphone] device from 'arecord -L' that no sound server manages) or disable the microphone")
            }
            return .system
        case nil:
            guard !sessions.isEmpty else { return .system }
            // Through sudo: the user service is the caller's, set up by the caller.
            guard uid == getuid() else {
                console.line("  recommended: as \(name), without sudo: ariata-agent onboard --user-service")
                console.line("  going on with the system service (--system-service says so without this note)")
                return .system
            }
            let user = try prompter.confirm("  Run the agent as your user service (recommended here)?", default: true)
            return user ? .user : .system
        }
    }

    /// The request for a user service: its config path (unless one was given) and its
    /// user, the person running onboard.
    static func userRequest(_ request: OnboardRequest, paths: UserServicePaths) -> OnboardRequest {
        var adjusted = request
        if request.configPath == AgentConfig.defaultPath { adjusted.configPath = paths.config }
        adjusted.serviceUser = getpwuid(getuid()).map { String(cString: $0.pointee.pw_name) } ?? request.serviceUser
        return adjusted
    }

    /// A user service cannot write the system's queue: the default database moves under
    /// the user's state directory (the queue makes the directory when it first opens).
    static func userConfig(_ config: inout AgentConfig, paths: UserServicePaths) {
        if config.storage.database == StorageConfig.defaultDatabase { config.storage.database = paths.database }
    }
}
