import AgentCore
import Foundation
import Logging
import Platform
import Synchronization

/// The journal of one chunk in progress: the Ogg pages libopusenc produced so far, appended
/// as they come (one file, its name the chunk's header: `JournalHeader`).
///
/// Appends are plain write(2) calls on the capture thread: they reach the page cache at
/// once, which is all a SIGKILL needs. When they reach the disk, which a power cut needs,
/// is `JournalDurability`'s to decide.
public final class JournalFile: @unchecked Sendable {
    // @unchecked: `descriptor` is immutable; the mutable state sits in `state`.
    public let id: UUID
    /// The file's path (its name holds the chunk's header).
    public let path: String
    private let descriptor: Int32
    private let journal: AudioJournal

    private struct State {
        var closed = false
        var failure: String?
    }
    private let state = Mutex(State())

    init(id: UUID, path: String, descriptor: Int32, journal: AudioJournal) {
        self.id = id
        self.path = path
        self.descriptor = descriptor
        self.journal = journal
    }

    deinit { close(descriptor) }

    /// Appends pages. A failed write (disk full) stops this chunk's journal: the chunk is
    /// still delivered from memory; only what a crash could save is lost.
    public func append(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.baseAddress != nil, !bytes.isEmpty else { return }
        guard state.withLock({ $0.failure == nil && !$0.closed }) else { return }
        if let code = FileWrites.writeAll(bytes, to: descriptor) {
            fail("write failed: \(String(cString: strerror(code)))")
            return
        }
        journal.durability.appended(bytes.count, to: id)
    }

    /// The chunk is finished (its last pages are in): no more appends, and the sync of
    /// those pages is left to whoever takes the chunk next (`JournalDurability`).
    func pagesComplete() {
        journal.durability.pagesComplete(id)
        state.withLock { $0.closed = true }
    }

    /// The chunk was dropped (nothing beyond its overlap, or it could not be encoded): its
    /// journal goes too.
    func discard() {
        state.withLock { $0.closed = true }
        journal.remove(id)
    }

    /// fdatasyncs the file on the calling thread (`JournalDurability.syncDue`).
    func syncData() {
        if fdatasync(descriptor) != 0 {
            fail("fdatasync failed: \(String(cString: strerror(errno)))")
        }
    }

    private func fail(_ reason: String) {
        let first = state.withLock { state -> Bool in
            defer { if state.failure == nil { state.failure = reason } }
            return state.failure == nil
        }
        if first {
            journal.logger.error("audio journal: \(reason); this chunk is kept in memory only until it is in the queue",
                                 metadata: ["id": "\(id)", "directory": "\(journal.directory)"])
        }
    }
}
