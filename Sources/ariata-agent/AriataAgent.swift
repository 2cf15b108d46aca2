import AgentCore
import ArgumentParser

struct AriataAgent: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ariata-agent",
        abstract: "Collects location, microphone audio and health samples and uploads them to your Ariata server.",
        discussion: """
            ariata-agent runs as a daemon ('ariata-agent run', started by systemd). Every capture \
            is written to a local SQLite queue first and uploaded from there, so nothing is lost \
            while the network or the server is away.

            Set a device up once with 'ariata-agent onboard'; see how it is doing with \
            'ariata-agent status'.
            """,
        version: AgentVersion.string,
        subcommands: [
            RunCommand.self, OnboardCommand.self, StatusCommand.self, SyncCommand.self,
            PauseCommand.self, ResumeCommand.self, PurgeCommand.self, ExportCommand.self, CoverageCommand.self, DoctorCommand.self,
        ]
    )
}
