import AgentCore
import Foundation

/// The closing lines of `ariata-agent sync`: what went, what did not and why.
public struct SyncSummary: Sendable {
    public let report: SyncReport

    public init(report: SyncReport) { self.report = report }

    /// True when everything pending was delivered (records the server refused as bad are
    /// not "undelivered": they are failed, and said so).
    public var delivered: Bool { report.drainedAll && report.recordsFailed == 0 }

    public var text: String {
        if let skipped = report.skipped {
            switch skipped {
            case .notConfigured(let reason): return "nothing sent: \(reason)"
            case .authPaused(let until), .circuitOpen(let until):
                return "nothing sent: uploads are paused until \(RFC3339.string(from: until))"
            case .rateLimited(let until):
                return "nothing sent: \(AgentErrorCode.rateLimited.rawValue) the server asked to slow down; uploads wait until \(RFC3339.string(from: until))"
            case .storeError(let reason): return "nothing sent: the queue could not be read: \(reason)"
            case .stopped: return "nothing sent: stopped"
            }
        }
        let seconds = report.finishedAt.timeIntervalSince(report.startedAt)
        let bytes = report.streams.values.reduce(Int64(0)) { $0 + $1.bytesSent }
        var lines = [String(format: "sent %d records (%@) in %d requests, %.1f s",
                            report.recordsSent, ProgressBar.bytes(bytes), report.requests, seconds)]
        for (stream, result) in report.streams.sorted(by: { $0.key < $1.key }) {
            switch result.outcome {
            case .drained:
                if result.recordsFailed > 0 {
                    lines.append("\(stream.rawValue): \(result.recordsFailed) records refused by the server as invalid (kept as failed for 3 days; see the log)")
                }
            case .waiting(let until):
                lines.append("\(stream.rawValue): not sent, waiting to retry at \(RFC3339.string(from: until))")
            case .deferredOnMeteredNetwork:
                lines.append("\(stream.rawValue): not sent, held for an unmetered connection ([upload] on_metered)")
            case .retryLater(let reason, let code, let at):
                lines.append("\(stream.rawValue): not all sent: \(code.map { "\($0.rawValue) " } ?? "")\(reason); retried at \(RFC3339.string(from: at))")
            case .unauthorized(let reason, _):
                // The reason ends with what to do (IngestVerdict): a new token, or, for a
                // server that refuses every device, a server update.
                lines.append("\(stream.rawValue): \(AgentErrorCode.invalidToken.rawValue) \(reason)")
            case .storeError(let reason):
                lines.append("\(stream.rawValue): the queue could not be read or written: \(reason)")
            case .notReached:
                lines.append("\(stream.rawValue): not reached (the upload ended before its turn)")
            }
        }
        if delivered { lines.append("everything pending was delivered") }
        return lines.joined(separator: "\n")
    }
}
