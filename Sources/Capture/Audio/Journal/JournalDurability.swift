import AgentCore
import Dispatch
import Foundation
import Platform
import Synchronization

/// When a chunk's journal reaches the disk: the one place that decides it
/// (docs/streams/microphone.md, "The audio journal").
///
/// - A chunk's file is made under a name that holds its header; the directory is fsynced
///   on `syncQueue`, off the capture thread, and a chunk's pages are never synced before
///   that (the header is durable before any page).
/// - Pages of a chunk in progress are fdatasync'ed on the capture thread, between two
///   reads (`syncDue`), once the oldest of them has waited `syncInterval`: no hand-over to
///   another thread, and the ALSA buffer is what lets a slow card's flush hold the thread up.
/// - A finished chunk's last pages are left to whoever takes the chunk next: the queue,
///   which links the file in as the record's attachment and fdatasyncs it (one sync and,
///   on ext4, one file-system journal commit per chunk instead of two); a chunk the queue
///   does not take now (`chunkWaits`) has its file synced here, once, so it survives a
///   power cut whole while it waits.
public final class JournalDurability: Sendable {
    public let directory: String
    /// How long a page of a chunk in progress may wait for its fdatasync (the daemon passes
    /// `[microphone] journal_sync_seconds`); a page waits at most this plus one read.
    public let syncInterval: Duration
    /// The directory's fsync after a chunk's file is made runs here.
    private let syncQueue = DispatchQueue(label: "ariata.microphone.journal")
    /// fdatasyncs a waiting chunk's file by its path (tests watch it).
    private let syncFile: @Sendable (String) -> Void

    /// The journal's cost: what `MicrophoneStream.stats()` shows.
    public struct Stats: Sendable, Equatable {
        /// Ogg bytes appended to journal files.
        public var bytes = 0
        /// fdatasync/fsync calls made for chunks in progress (pages and the directory).
        public var syncs = 0
        /// The longest a page waited between its write and the end of its fdatasync: what
        /// a power cut can cost besides the audio not yet in a page.
        public var longestUnsynced: Duration = .zero
    }
    private let stats = Mutex(Stats())

    /// A chunk in progress and its bytes not yet on the disk.
    private struct InProgress {
        let file: JournalFile
        var unsyncedBytes = 0
        /// When the oldest byte not yet synced was written.
        var unsyncedSince: ContinuousClock.Instant?
        /// The directory's fsync (queued by `began`) was waited for.
        var headerSynced = false
    }
    private let inProgress = Mutex<[UUID: InProgress]>([:])
    /// Finished chunks waiting for the queue whose file was synced here.
    private let waitingSynced = Mutex<Set<UUID>>([])

    public init(directory: String, syncInterval: Duration,
                syncFile: @escaping @Sendable (String) -> Void = { FileWrites.syncFile($0) }) {
        self.directory = directory
        self.syncInterval = syncInterval
        self.syncFile = syncFile
    }

    public func currentStats() -> Stats { stats.withLock { $0 } }

    // MARK: A chunk in progress

    /// The chunk's file was made: its name (its header) goes to the disk now, before any of
    /// its pages.
    func began(_ file: JournalFile) {
        inProgress.withLock { $0[file.id] = InProgress(file: file) }
        syncQueue.async { [self] in
            FileWrites.syncDirectory(directory)
            stats.withLock { $0.syncs += 1 }
        }
    }

    /// Pages were appended to chunk `id`'s file. No sync here: a block's pages come in
    /// several appends, and a sync after the first would leave the others waiting a whole
    /// interval; the capture loop asks (`syncDue`) once the block is in.
    func appended(_ bytes: Int, to id: UUID) {
        stats.withLock { $0.bytes += bytes }
        inProgress.withLock { files in
            guard files[id] != nil else { return }
            files[id]?.unsyncedBytes += bytes
            if files[id]?.unsyncedSince == nil { files[id]?.unsyncedSince = .now }
        }
    }

    /// Called from the capture loop before every read, so after each block's pages: syncs,
    /// on the capture thread, the files whose oldest unsynced page is `syncInterval` old.
    public func syncDue() {
        let now = ContinuousClock.now
        let due = inProgress.withLock { files -> [(file: JournalFile, since: ContinuousClock.Instant?, headerSynced: Bool)] in
            var due: [(file: JournalFile, since: ContinuousClock.Instant?, headerSynced: Bool)] = []
            for (id, entry) in files {
                guard entry.unsyncedBytes > 0, let since = entry.unsyncedSince, now - since >= syncInterval else { continue }
                due.append((entry.file, entry.unsyncedSince, entry.headerSynced))
                files[id]?.unsyncedBytes = 0
                files[id]?.unsyncedSince = nil
                files[id]?.headerSynced = true
            }
            return due
        }
        for (file, since, headerSynced) in due {
            // Once per chunk: the directory's fsync was queued when it began and is long
            // done by the first sync (seconds later), so this returns at once.
            if !headerSynced { waitForSyncs() }
            file.syncData()
            countSync(waited: since.map { ContinuousClock.now - $0 })
        }
    }

    /// The chunk's last page is in its file: its sync is left to whoever takes the chunk
    /// (the queue, or `chunkWaits`).
    func pagesComplete(_ id: UUID) {
        inProgress.withLock { _ = $0.removeValue(forKey: id) }
    }

    // MARK: A finished chunk

    /// A finished chunk the queue did not take now: its journal file (`path`) is synced,
    /// once however often the queue refuses it.
    func chunkWaits(_ id: UUID, file path: String) {
        let first = waitingSynced.withLock { $0.insert(id).inserted }
        if first { syncFile(path) }
    }

    /// Chunk `id` is no concern of the journal's any more: in the queue, dropped, or no
    /// longer held in memory (its file, if any, stays for the next start).
    func forget(_ id: UUID) {
        inProgress.withLock { _ = $0.removeValue(forKey: id) }
        waitingSynced.withLock { _ = $0.remove(id) }
    }

    /// Waits until every directory sync asked for so far is done (tests, benchmarks, stop).
    public func waitForSyncs() { syncQueue.sync {} }

    private func countSync(waited: Duration?) {
        stats.withLock { stats in
            stats.syncs += 1
            if let waited, waited > stats.longestUnsynced { stats.longestUnsynced = waited }
        }
    }
}
