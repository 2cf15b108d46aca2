import AgentCore
import ArgumentParser
import Foundation

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Shows queues, last sync and the health of each stream.",
        discussion: """
            Reads the configuration and the queue database (read-only: it works while the \
            daemon runs and when it does not, and changes nothing). Shows whether the device \
            is set up and the daemon runs; per stream whether it is enabled, paused or healthy \
            (and why not), its pending and failed records, the age of its oldest pending \
            record and its last capture; the last upload attempt and success with the last \
            error code (E001-E005); the queue's size and the free disk; and warnings.

            --json prints the same as JSON with a stable schema (see the README, "status --json").

            Exit status, for scripts: 0 when everything is healthy; 1 when there are warnings \
            (a stream unhealthy or paused, uploads failing, storage low, not set up); 3 when \
            the device is set up but the daemon is not running (like 'systemctl is-active'); \
            2 when the status could not be read at all (a usage error too).
            """)

    @OptionGroup var options: ConfigOptions

    @Flag(help: "Print JSON (stable schema, schema_version 1) instead of text.")
    var json = false

    func run() throws {
        var config: AgentConfig?
        var configError: String?
        do {
            config = try AgentConfig.load(path: options.config, missingOK: true)
        } catch {
            configError = "\(error)"
        }
        let report = StatusReader().read(config: config, configFile: options.config, configError: configError)
        if json {
            FileHandle.standardOutput.write(try report.json())
            FileHandle.standardOutput.write(Data("\n".utf8))
        } else {
            print(StatusText(colour: StatusText.wantsColour(), now: report.generatedAt).render(report), terminator: "")
        }
        if report.exitStatus != 0 { throw ExitCode(report.exitStatus) }
    }
}
