import AgentCore
import ArgumentParser
import Foundation
import Reports

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

            --json prints the same as JSON with a stable schema (docs/operations.md, "status --json"; the schema is docs/status.schema.json).

            --prometheus prints the same numbers in the Prometheus text format (the file \
            [metrics] textfile has the daemon write at every maintenance round, for \
            node_exporter's textfile collector): ariata_agent_pending_records{stream=...}, \
            ..._pending_bytes, ..._oldest_pending_age_seconds, ..._last_capture_timestamp_seconds, \
            ..._last_upload_success_timestamp_seconds, ..._sent_records_total, \
            ..._sent_bytes_total, ..._upload_errors_total{code=...}, ..._stream_healthy, \
            ..._stream_paused, ..._storage_evicted_records_total, ..._queue_size_bytes, \
            ..._disk_free_bytes and more (docs/operations.md, "Metrics").

            Exit status, for scripts: 0 when everything is healthy (a stream paused, switched \
            off, or waiting for the server's stream switches is not a warning); 1 when there \
            are warnings (a stream unhealthy, uploads failing, storage low, not set up); 3 when \
            the device is set up but the daemon is not running (like 'systemctl is-active'); \
            2 when the status could not be read at all (a usage error too).
            """)

    @OptionGroup var options: ConfigOptions

    @Flag(help: "Print JSON (stable schema, schema_version 1) instead of text.")
    var json = false

    @Flag(help: "Print Prometheus text-format metrics instead of text.")
    var prometheus = false

    func validate() throws {
        if json && prometheus { throw ValidationError("give --json or --prometheus, not both") }
    }

    func run() throws {
        var config: AgentConfig?
        var configError: String?
        do {
            config = try AgentConfig.load(path: options.config, missingOK: true)
        } catch {
            configError = "\(error)"
        }
        let report = StatusReader().read(config: config, configFile: options.config, configError: configError)
        if prometheus {
            print(PrometheusText.render(report), terminator: "")
        } else if json {
            FileHandle.standardOutput.write(try report.json())
            FileHandle.standardOutput.write(Data("\n".utf8))
        } else {
            print(StatusText(colour: StatusText.wantsColour(), now: report.generatedAt).render(report), terminator: "")
        }
        if report.exitStatus != 0 { throw ExitCode(report.exitStatus) }
    }
}
