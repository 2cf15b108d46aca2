import AgentCore
import Foundation
import Logging
import Platform
import Reports
import Synchronization

/// Writes `[metrics] textfile` at every maintenance round: the status report in Prometheus
/// text format, written to a temporary file beside it and renamed over it, so
/// node_exporter's textfile collector never reads half a file.
public final class MetricsTextfile: Sendable {
    private let logger: Logger
    /// The last write failed: say so once, and once again when it works.
    private let failing = Mutex(false)

    public init(logger: Logger) { self.logger = logger }

    public func write(config: AgentConfig) {
        guard let path = config.metrics.textfile else { return }
        let report = StatusReader().read(config: config, configFile: config.file)
        do {
            try Self.replace(path, with: PrometheusText.render(report))
            if failing.withLock({ was -> Bool in defer { was = false }; return was }) {
                logger.notice("the metrics file \(path) is written again")
            }
        } catch {
            if !failing.withLock({ was -> Bool in defer { was = true }; return was }) {
                logger.error("cannot write the metrics file \(path): \(error); check that its directory exists and the service user may write to it ([metrics] textfile)")
            }
        }
    }

    /// The temporary name starts with a dot and does not end in .prom, so the collector
    /// never picks it up; mode 0644, as node_exporter runs as another user. Not fsynced:
    /// the file is rewritten at every maintenance round, and a power cut can at worst lose the
    /// last one, where a sync each time would cost card writes.
    static func replace(_ path: String, with text: String) throws {
        try FileWrites.replace(path, with: Data(text.utf8), mode: 0o644, durable: false)
    }
}
