import AgentCore
import Dispatch
import Foundation
import Logging
import Synchronization

/// Writes finished chunks to the queue off the capture thread, one transaction per chunk,
/// so a slow disk (an SD card's fsync) never holds up capture long enough to overrun.
///
/// A chunk whose write fails (disk full) is kept and retried before the next one, up to
/// `maxBacklog` chunks (`MicrophoneTuning.maxChunksWaiting`); beyond that the oldest is
/// dropped from memory with a logged error rather than growing memory without bound (with
/// the audio journal on, it stays there and is written at the next start of the stream).
///
/// `written` is told each record id once its enqueue returned: only then may the chunk's
/// journal go. `durability` is told of every chunk left waiting, whose journal must then
/// survive a power cut whole.
final class ChunkWriter: @unchecked Sendable {
    // @unchecked: `backlog` is touched only on `writing`, a serial queue. What other threads
    // read (`status`) sits in a Mutex, so liveness() never waits for a slow write.
    private let queue: any RecordSink
    private let logger: Logger
    private let writing = DispatchQueue(label: "ariata.microphone.writer")
    private let maxBacklog: Int
    private let written: @Sendable (UUID) -> Void
    private let durability: JournalDurability?
    private var backlog: [NewRecord] = []

    struct Status: Sendable {
        var written = 0
        var waiting = 0
        var lastError: String?
        var storageFull = false
    }
    private let status = Mutex(Status())

    /// - Parameter durability: the audio journal's, nil without a journal.
    init(queue: any RecordSink, logger: Logger, maxBacklog: Int = MicrophoneTuning().maxChunksWaiting,
         written: @escaping @Sendable (UUID) -> Void = { _ in }, durability: JournalDurability? = nil) {
        self.queue = queue
        self.logger = logger
        self.maxBacklog = maxBacklog
        self.written = written
        self.durability = durability
    }

    func write(_ record: NewRecord) {
        status.withLock { $0.waiting += 1 }
        writing.async {
            self.backlog.append(record)
            if self.backlog.count > self.maxBacklog {
                let dropped = self.backlog.removeFirst()
                self.durability?.forget(dropped.id)
                self.status.withLock { $0.waiting -= 1 }
                self.logger.error("microphone chunk dropped from memory: the queue refused writes for too long (it stays in the audio journal, when on, until the next start)",
                                  metadata: ["id": "\(dropped.id)", "captured_at": "\(RFC3339.string(from: dropped.capturedAt))"])
            }
            self.drain()
        }
    }

    /// Waits until every chunk handed over has been written (or has failed again).
    func flush() {
        writing.sync { drain() }
    }

    func current() -> Status {
        status.withLock { $0 }
    }

    private func drain() {
        while let record = backlog.first {
            do {
                try queue.enqueue(record)
                backlog.removeFirst()
                durability?.forget(record.id)
                written(record.id)
                status.withLock {
                    $0.written += 1
                    $0.waiting -= 1
                    $0.lastError = nil
                    $0.storageFull = false
                }
            } catch {
                let first = status.withLock { status -> Bool in
                    let first = status.lastError == nil
                    status.lastError = "\(error)"
                    if QueueError.isStorageFull(error) { status.storageFull = true }
                    return first
                }
                if first {
                    logger.error("cannot write microphone chunk to the queue; keeping it to retry",
                                 metadata: ["error": "\(error)", "waiting": "\(backlog.count)"])
                }
                // The chunks left waiting keep their journal whole across a power cut.
                for waiting in backlog {
                    if let file = waiting.attachment?.existingFile { durability?.chunkWaits(waiting.id, file: file) }
                }
                return
            }
        }
    }
}
