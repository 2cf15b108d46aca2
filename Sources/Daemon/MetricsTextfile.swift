import AgentCore
import Foundation
import Logging
import Synchronization

/// Writes `[metrics] textfile` at every health check: the status report in Prometheus
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
    /// never picks it up; mode 0644, as node_exporter runs as another user.
    static func replace(_ path: String, with text: String) throws {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp").path
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw POSIXFailure("open \(temporary)", errno) }
        let data = Data(text.utf8)
        let written = data.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        let writeErrno = errno
        close(fd)
        guard written == data.count else {
            unlink(temporary)
            throw POSIXFailure("write \(temporary)", written < 0 ? writeErrno : ENOSPC)
        }
        guard rename(temporary, path) == 0 else {
            let renameErrno = errno
            unlink(temporary)
            throw POSIXFailure("rename to \(path)", renameErrno)
        }
    }
}

struct POSIXFailure: Error, CustomStringConvertible {
    let what: String
    let code: Int32
    init(_ what: String, _ code: Int32) {
        self.what = what
        self.code = code
    }
    var description: String { "\(what): \(String(cString: strerror(code)))" }
}
