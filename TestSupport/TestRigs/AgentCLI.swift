import Foundation
import Rigs

/// Runs the built `ariata-agent` binary as a user would, with a config in a temp dir.
public struct AgentCLI {
    public let directory: String
    public let configPath: String

    public init(directory: String, configPath: String) {
        self.directory = directory
        self.configPath = configPath
    }

    public struct Result {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// Runs `ariata-agent <arguments> --config <config>` (the config option is added unless
    /// `withConfig` is false) and waits for it.
    public func run(_ arguments: [String], environment: [String: String] = [:], withConfig: Bool = true,
                    timeout: TimeInterval = 60) throws -> Result {
        let binary = try BuildProducts.executable("ariata-agent")
        let child = try ChildProcess(binary, arguments + (withConfig ? ["--config", configPath] : []),
                                     name: "ariata-agent", logDirectory: directory, environment: environment)
        guard let status = child.wait(timeout: timeout) else {
            child.stop()
            throw TimedOut(what: "ariata-agent \(arguments.joined(separator: " "))")
        }
        return Result(status: status, stdout: child.stdout(), stderr: child.stderr())
    }

    /// Writes a config file that keeps everything inside `directory`.
    public static func writeConfig(in directory: String, server: String = "", extra: String = "") throws -> AgentCLI {
        let path = "\(directory)/agent.toml"
        try """
        \(server.isEmpty ? "" : "[server]\n\(server)\n")
        [storage]
        database = "\(directory)/agent.sqlite"
        \(extra)
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return AgentCLI(directory: directory, configPath: path)
    }

    /// Config sections for the health stream alone: location and microphone off, health on
    /// with `healthKeys` (lines of `[health]`) and one `[[health.source]]` of `source` lines.
    public static func healthOnly(source: String, healthKeys: String = "") -> String {
        """
        [location]
        enabled = false
        [microphone]
        enabled = false
        [health]
        enabled = true
        \(healthKeys.isEmpty ? "" : healthKeys + "\n")[[health.source]]
        \(source)
        """
    }
}
