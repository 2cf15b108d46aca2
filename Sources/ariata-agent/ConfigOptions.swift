import AgentCore
import ArgumentParser

/// `--config`, shared by every subcommand that reads the configuration.
struct ConfigOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: ArgumentHelp("The configuration file.", valueName: "path"))
    var config: String = AgentConfig.defaultPath
}

/// Says that a command is not built yet, and fails (EX_UNAVAILABLE).
func notYetAvailable(_ command: String) -> ExitCode {
    print("ariata-agent \(command): not yet available in this version (\(AgentVersion.string)).")
    return ExitCode(69)
}
