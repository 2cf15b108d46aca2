import AgentCore
import Foundation

/// Onboarding's last step: start the daemon under systemd when systemd runs and the unit
/// is installed (restart it when it already runs, so it reads the new config), or say
/// the command that starts it. The system service, or the user service
/// (`systemctl --user`, with lingering so it runs without a login).
struct ServiceStep {
    static let unit = "ariata-agent.service"

    let configPath: String
    let prompter: any Prompter
    let console: Console
    var mode = ServiceMode.system
    /// Exists when systemd is the init system (sd_booted(3) checks the same directory).
    var systemdDirectory = "/run/systemd/system"

    func run() throws {
        if mode == .user { return try runUser() }
        guard FileManager.default.fileExists(atPath: systemdDirectory) else {
            console.line("  systemd does not run here; start the agent with:")
            console.line("    ariata-agent run --config \(configPath)")
            return
        }
        guard let load = systemctl(["show", "--property=LoadState", "--value", Self.unit]),
              load.status == 0, load.output.trimmingCharacters(in: .whitespacesAndNewlines) == "loaded" else {
            console.line("  the systemd unit \(Self.unit) is not installed (install it with 'sudo make install');")
            console.line("  until then start the agent with: ariata-agent run --config \(configPath)")
            return
        }
        if configPath != AgentConfig.defaultPath {
            console.line("  the service reads \(AgentConfig.defaultPath), not \(configPath): start this configuration with")
            console.line("    ariata-agent run --config \(configPath)")
            return
        }
        let running = systemctl(["is-active", "--quiet", Self.unit])?.status == 0
        let command = running ? ["restart", Self.unit] : ["enable", "--now", Self.unit]
        let shown = "systemctl \(command.joined(separator: " "))"
        guard getuid() == 0 else {
            console.line("  \(running ? "restart the service so it reads the new configuration" : "start the service") with:")
            console.line("    sudo \(shown)")
            return
        }
        let question = running ? "The service runs: restart it so it reads the new configuration?"
            : "Enable the service (start at boot) and start it now?"
        guard try prompter.confirm("  " + question, default: true) else {
            console.line("  not done; later: sudo \(shown)")
            return
        }
        guard let result = systemctl(command), result.status == 0 else {
            console.line("  FAIL  \(shown) failed; see: systemctl status ariata-agent; journalctl -u ariata-agent")
            return
        }
        console.line("  ok    \(running ? "restarted" : "enabled and started") \(Self.unit) (see it with: ariata-agent status)")
    }

    /// The user service: the unit of the package (/usr/lib/systemd/user) or of
    /// `make install-user`, run by the person's own systemd (`systemctl --user`).
    private func runUser() throws {
        let user = getpwuid(getuid()).map { String(cString: $0.pointee.pw_name) } ?? "uid \(getuid())"
        let expected = UserServicePaths().config
        guard configPath == expected else {
            console.line("  the user service reads \(expected), not \(configPath): start this configuration with")
            console.line("    ariata-agent run --config \(configPath)")
            return
        }
        guard FileManager.default.fileExists(atPath: systemdDirectory),
              let load = systemctl(["--user", "show", "--property=LoadState", "--value", Self.unit]), load.status == 0 else {
            console.line("  no systemd user manager for \(user) here; once logged in to a systemd desktop:")
            console.line("    loginctl enable-linger \(user); systemctl --user enable --now \(Self.unit)")
            console.line("  until then start the agent with: ariata-agent run --config \(configPath)")
            return
        }
        guard load.output.trimmingCharacters(in: .whitespacesAndNewlines) == "loaded" else {
            console.line("  the user unit \(Self.unit) is not installed: the ariata-agent package installs it, or 'make install-user' from the source")
            console.line("  until then start the agent with: ariata-agent run --config \(configPath)")
            return
        }
        // Lingering: the user's systemd (and so the agent) starts at boot and stays when the person logs out.
        let lingers = run(["/usr/bin/loginctl", "/bin/loginctl"], ["show-user", user, "--property=Linger", "--value"])?
            .output.trimmingCharacters(in: .whitespacesAndNewlines) == "yes"
        if !lingers {
            if try prompter.confirm("  Keep the agent running while you are logged out, from boot on (loginctl enable-linger \(user))?", default: true) {
                let done = run(["/usr/bin/loginctl", "/bin/loginctl"], ["enable-linger", user])?.status == 0
                console.line(done ? "  ok    lingering on for \(user)" : "  FAIL  loginctl enable-linger \(user) failed: the agent runs only while you are logged in")
            } else {
                console.line("  not done: the agent runs only while you are logged in; later: loginctl enable-linger \(user)")
            }
        }
        let running = systemctl(["--user", "is-active", "--quiet", Self.unit])?.status == 0
        let command = ["--user"] + (running ? ["restart", Self.unit] : ["enable", "--now", Self.unit])
        let shown = "systemctl \(command.joined(separator: " "))"
        let question = running ? "Your service runs: restart it so it reads the new configuration?"
            : "Enable your user service (start with your systemd) and start it now?"
        guard try prompter.confirm("  " + question, default: true) else {
            console.line("  not done; later: \(shown)")
            return
        }
        guard let result = systemctl(command), result.status == 0 else {
            console.line("  FAIL  \(shown) failed; see: systemctl --user status ariata-agent; journalctl --user -u ariata-agent")
            return
        }
        console.line("  ok    \(running ? "restarted" : "enabled and started") your \(Self.unit) (see it with: ariata-agent status --config \(configPath))")
    }

    private func systemctl(_ arguments: [String]) -> (status: Int32, output: String)? {
        run(["/usr/bin/systemctl", "/bin/systemctl"], arguments)
    }

    /// Runs the first of `candidates` that exists; its status and standard output.
    private func run(_ candidates: [String], _ arguments: [String]) -> (status: Int32, output: String)? {
        let path = candidates.first(where: FileManager.default.isExecutableFile(atPath:))
        guard let path else { return nil }
        return CommandOutput.run(path, arguments)
    }
}
