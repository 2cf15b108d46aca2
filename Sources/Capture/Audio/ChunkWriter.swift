import AgentCore
import Dispatch
import Foundation
import Logging
import Platform
import Synchronization

/// Writes finished chunks to the queue off the capture thread, one transaction per chunk,
/// so a slow disk (an SD card's fsync) never holds up capture long enough to overrun.
///
/// A chunk whose write fails (disk full) is kept and retried before the next one, up to
/// `maxBacklog` chunks (about ten minutes of audio); beyond that the oldest is dropped
/// from memory with a logged error rather than growing memory without bound (with the
/// audio journal on, it stays there and is written at the next start of the stream).
///
/// `written` is told each record id once its enqueue returned: only then may the chunk's
/// journal go.
final class ChunkWriter: @unchecked Sendable {
    // @unchecked: `backlog` is touched only on `queue`, a serial queue. What other threads
    // read (`status`) sits in a Mutex, so liveness() never waits for a slow write.
    private let sink: any RecordSink
    private let logger: Logger
    private let queue = DispatchQueue(label: "ariata.microphone.writer")
    private let maxBacklog: Int
    private let written: @Sendable (UUID) -> Void
    private var backlog: [NewRecord] = []
    /// Chunks in `backlog` whose journal file was synced here (see `keepJournalsDurable`).
    private var journalSynced: Set<UUID> = []

    struct Status: Sendable {
        var written = 0
        var waiting = 0
        var lastError: String?
        var storageFull = false
    }
    private let status = Mutex(Status())

    private let syncJournal: @Sendable (String) -> Void

    /// - Parameter syncJournal: fdatasyncs a waiting chunk's journal file (tests watch it).
    init(sink: any RecordSink, logger: Logger, maxBacklog: Int = 20, written: @escaping @Sendable (UUID) -> Void = { _ in },
         syncJournal: @escaping @Sendable (String) -> Void = { FileWrites.syncFile($0) }) {
        self.sink = sink
        self.logger = logger
        self.maxBacklog = maxBacklog
        self.written = written
        self.syncJournal = syncJournal
    }

    func write(_ record: NewRecord) {
        status.withLock { $0.waiting += 1 }
        queue.async {
            self.backlog.append(record)
            if self.backlog.count > self.maxBacklog {
                let dropped = self.backlog.removeFirst()
                self.journalSynced.remove(dropped.id)
                self.status.withLock { $0.waiting -= 1 }
                self.logger.error("microphone chunk dropped from memory: the queue refused writes for too long (it stays in the audio journal, when on, until the next start)",
                                  metadata: ["id": "\(dropped.id)", "captured_at": "\(RFC3339.string(from: dropped.capturedAt))"])
            }
            self.drain()
        }
    }

    /// Waits until every chunk handed over has been written (or has failed again).
    func flush() {
        queue.sync { drain() }
    }

    func current() -> Status {
        status.withLock { $0 }
    }

    private func drain() {
        while let record = backlog.first {
            do {
                try sink.enqueue(record)
                backlog.removeFirst()
                journalSynced.remove(record.id)
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
                keepJournalsDurable()
                return
            }
        }
    }

    /// A finished chunk's last pages are synced by the queue as it takes the chunk
    /// (`JournalFile.pagesComplete`); chunks left waiting here have their journal file
    /// synced once instead, so a chunk that waits for the queue survives a power cut whole.
    private func keepJournalsDurable() {
        for record in backlog where !journalSynced.contains(record.id) {
            guard let file = record.attachment?.existingFile else { continue }
            journalSynced.insert(record.id)
            syncJournal(file)
        }
    }
}
