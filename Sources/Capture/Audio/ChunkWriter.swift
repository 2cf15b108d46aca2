import AgentCore
import Dispatch
import Foundation
import Logging

/// Writes finished chunks to the queue off the capture thread, one transaction per chunk,
/// so a slow disk (an SD card's fsync) never holds up capture long enough to overrun.
///
/// A chunk whose write fails (disk full) is kept and retried before the next one, up to
/// `maxBacklog` chunks (about ten minutes of audio); beyond that the oldest is dropped
/// with a logged error rather than growing memory without bound.
final class ChunkWriter: @unchecked Sendable {
    // @unchecked: `backlog` and `lastError` are touched only on `queue`, a serial queue;
    // `lastError` is read from other threads through `queue.sync`.
    private let sink: any RecordSink
    private let logger: Logger
    private let queue = DispatchQueue(label: "ariata.microphone.writer")
    private let maxBacklog: Int
    private var backlog: [NewRecord] = []
    private var lastError: (any Error)?
    private var written = 0

    init(sink: any RecordSink, logger: Logger, maxBacklog: Int = 20) {
        self.sink = sink
        self.logger = logger
        self.maxBacklog = maxBacklog
    }

    func write(_ record: NewRecord) {
        queue.async {
            self.backlog.append(record)
            if self.backlog.count > self.maxBacklog {
                let dropped = self.backlog.removeFirst()
                self.logger.error("microphone chunk lost: the queue refused writes for too long",
                                  metadata: ["id": "\(dropped.id)", "captured_at": "\(RFC3339.string(from: dropped.capturedAt))"])
            }
            self.drain()
        }
    }

    /// Waits until every chunk handed over has been written (or has failed again).
    func flush() {
        queue.sync { drain() }
    }

    /// The error of the last failed write while chunks are still waiting; nil when all are written.
    func failure() -> (any Error)? {
        queue.sync { backlog.isEmpty ? nil : lastError }
    }

    func writtenCount() -> Int {
        queue.sync { written }
    }

    func pendingCount() -> Int {
        queue.sync { backlog.count }
    }

    private func drain() {
        while let record = backlog.first {
            do {
                try sink.enqueue(record)
                backlog.removeFirst()
                written += 1
                lastError = nil
            } catch {
                if lastError == nil {
                    logger.error("cannot write microphone chunk to the queue; keeping it to retry",
                                 metadata: ["error": "\(error)", "waiting": "\(backlog.count)"])
                }
                lastError = error
                return
            }
        }
    }
}
