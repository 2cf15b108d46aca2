import AgentCore
import ArgumentParser
import Foundation
import Setup

struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Runs the device checks of onboarding again.",
        discussion: """
            Reads the configuration (with the ARIATA_* environment overrides, as the daemon \
            does) and checks, for the streams it enables: gpsd answers, the ALSA capture \
            device opens, each health file or serial port can be read, the service user is \
            in the groups 'audio' and 'dialout', there is free disk under the database. When \
            a server is configured it is verified too, with one request carrying an empty \
            batch (nothing is stored). Each check prints ok, warn or FAIL; a failed one \
            prints the command that fixes it.

            It changes nothing. Run it as the service user or root to see what the daemon \
            would see (e.g. sudo ariata-agent doctor).

            --json prints the same as JSON (schema_version 1): config_file, ok, failed, \
            warnings, and checks, each with name, stream (or null), outcome \
            (ok/warning/failed), detail and fix (or null).

            Exit status: 0 when no check failed (warnings do not fail), 1 when one did.
            """)

    @OptionGroup var options: ConfigOptions

    @Flag(help: "Print JSON (schema_version 1) instead of text.")
    var json = false

    @Option(help: ArgumentHelp("Seconds to wait for the server (default: [server] request_timeout).", valueName: "seconds"))
    var timeout: Int?

    @Option(help: ArgumentHelp("The user the service runs as, whose groups are checked.", valueName: "user"))
    var serviceUser: String = "ariata"

    func run() throws {
        let report = Doctor(checks: DeviceChecks(serviceUser: serviceUser, serviceMode: .current()), timeout: timeout).run(configPath: options.config)
        if json {
            FileHandle.standardOutput.write(try report.json())
            FileHandle.standardOutput.write(Data("\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data(report.text(printer: CheckPrinter()).utf8))
        }
        if !report.ok { throw ExitCode(1) }
    }
}
