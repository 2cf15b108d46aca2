import AgentCore
import Foundation
import Logging
import Platform
import Synchronization

/// The journal of one chunk in progress: the Ogg pages libopusenc produced so far, appended
/// as they come (one file, its name the chunk's header: `JournalHeader`).
///
/// Appends are plain write(2) calls on the capture thread: they reach the page cache at
/// once, which is all a SIGKILL needs. fdatasync, which a power cut needs, runs on the
/// capture thread too, between two reads, once bytes have waited `syncInterval`: no
/// hand-over to another thread (each woke a Dispatch worker), and the ALSA buffer
/// (`ALSACapture`: 6 s beyond a wake) is what lets a slow SD card's flush hold the
/// thread up without losing audio.
public final class JournalFile: @unchecked Sendable {
    // @unchecked: `descriptor` is immutable; the mutable state sits in `state`.
    public let id: UUID
    /// The file's path (its name holds the chunk's header).
    public let path: String
    private let descriptor: Int32
    private let journal: AudioJournal

    private struct State {
        var unsyncedBytes = 0
        /// When the oldest byte not yet synced was written: how long bytes wait for their
        /// fsync is what a power cut can cost.
        var unsyncedSince: ContinuousClock.Instant?
        /// The directory's fsync (queued by `AudioJournal.begin`) was waited for: pages are
        /// never durable before the file's name, their header.
        var headerSynced = false
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
        state.withLock { state in
            state.unsyncedBytes += bytes.count
            if state.unsyncedSince == nil { state.unsyncedSince = .now }
        }
        journal.counted(bytes: bytes.count)
        // No sync here: a block's pages come in several appends, and a sync after the
        // first would leave the others waiting a whole interval. The capture loop asks
        // (`AudioJournal.syncDue`) once the block is in.
    }

    /// fdatasyncs, on the calling (capture) thread, when the oldest byte not yet synced
    /// has waited `syncInterval`.
    public func syncIfDue() {
        let due = state.withLock { state -> Bool in
            guard state.unsyncedBytes > 0, let since = state.unsyncedSince else { return false }
            return ContinuousClock.now - since >= journal.syncInterval
        }
        if due { sync() }
    }

    /// The chunk is finished (its last pages are in). Their sync is left to whoever takes
    /// the chunk next, a few milliseconds later: the queue's attachment store links this
    /// file in and fdatasyncs it (even when it cannot take the chunk), and `ChunkWriter`
    /// syncs the file of every chunk left waiting (disk full). One sync instead of two, and
    /// on ext4 one journal commit instead of two, per chunk; a chunk that waits for the
    /// queue (disk full) still survives a power cut whole.
    func pagesComplete() {
        journal.closed(id)
        state.withLock { $0.closed = true }
    }

    /// The chunk was dropped (nothing beyond its overlap, or it could not be encoded): its
    /// journal goes too.
    func discard() {
        state.withLock { $0.closed = true }
        journal.remove(id)
    }

    private func sync() {
        let (bytes, since, headerSynced) = state.withLock { state -> (Int, ContinuousClock.Instant?, Bool) in
            defer {
                state.unsyncedBytes = 0
                state.unsyncedSince = nil
                state.headerSynced = true
            }
            return (state.unsyncedBytes, state.unsyncedSince, state.headerSynced)
        }
        // Once per chunk: the directory's fsync was queued when it began and is long done by
        // the first sync (seconds later), so this returns at once without waking anyone.
        if !headerSynced { journal.waitForSyncs() }
        if bytes > 0, fdatasync(descriptor) != 0 {
            fail("fdatasync failed: \(String(cString: strerror(errno)))")
        }
        journal.countedSync(waited: since.map { ContinuousClock.now - $0 })
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
