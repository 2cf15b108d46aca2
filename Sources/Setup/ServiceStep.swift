import AgentCore
import Foundation

/// Onboarding's last step: start the daemon under systemd when systemd runs and the unit
/// is installed (restart it when it already runs, so it reads the new config), or say
/// the command that starts it.
struct ServiceStep {
    static let unit = "ariata-agent.service"

    let configPath: String
    let prompter: any Prompter
    let console: Console
    /// Exists when systemd is the init system (sd_booted(3) checks the same directory).
    var systemdDirectory = "/run/systemd/system"

    func run() throws {
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

    private func systemctl(_ arguments: [String]) -> (status: Int32, output: String)? {
        let path = ["/usr/bin/systemctl", "/bin/systemctl"].first(where: FileManager.default.isExecutableFile(atPath:))
        guard let path else { return nil }
        return CommandOutput.run(path, arguments)
    }
}
