import Foundation
import GRDB
import Logging
import Platform

/// The agent's database: one SQLite file in WAL mode, written by one process (the daemon)
/// and read by any number of others (`status`) at the same time. It owns the connection,
/// the schema (`Schema`), when commits reach the disk (`CommitSync`) and the attachment
/// files; the stores over it share its connection: `recordQueue` (the records: captures
/// written, the uploader's batches and marks, held records, export reads),
/// `housekeeping` (retention, eviction, compaction, purge, the attachment sweep),
/// `agentState` (named values, liveness, time evidence, events) and `PauseSwitches`
/// (docs/queue.md).
///
/// Each process holds one connection (a GRDB `DatabaseQueue`): its reads and writes take
/// turns on that connection's serial Dispatch queue. Not a `DatabasePool`: the pool hands
/// out its readers through concurrent Dispatch queues, and two threads meeting there (an
/// upload reading while a maintenance round reads) put the waiting one on Dispatch's default
/// global queue, whose workers libdispatch then watches with a timer every second for the
/// life of the process (docs/decisions/0001-one-sqlite-connection.md). One connection also holds one page cache.
public final class AgentDatabase: @unchecked Sendable {
    // @unchecked: the only stored state is GRDB's DatabaseQueue (thread-safe) and
    // immutable values.
    public let path: String
    let connection: DatabaseQueue
    let clock: any WallClock
    let logger: Logger
    /// Raised when a write fails because the disk is full; the storage guard listens.
    public let storagePressure = StoragePressure()
    /// Asked before each capture is written (the storage guard, once it is made).
    let captureRoom = CaptureRoomLink()
    /// The files of records' attachments (a chunk's audio), beside the database.
    let attachments: AttachmentStore
    /// Whether the file has schema 4's attachment tables (a read-only queue may be older).
    let hasAttachmentTables: Bool
    /// When commits reach the disk: a capture without a file may wait up to its window.
    public let commitSync: CommitSync

    /// Opens (creating when needed) the queue at `path` for writing, migrating it forward.
    /// `syncWindow`: how long a capture without a file may wait for its fsync (`[storage]
    /// sync_seconds`, see `CommitSync`); 0, the default, fsyncs every commit. `syncClock`:
    /// the never-jumping clock that window is measured on (the boot clock; a test's
    /// `VirtualScheduler.monotonicSeconds`).
    public init(path: String, syncWindow: TimeInterval = 0, clock: any WallClock = SystemClock(),
                syncClock: @escaping @Sendable () -> Double = CommitSync.bootSeconds,
                logger: Logger = Logger(.database)) throws {
        self.path = path
        self.clock = clock
        self.logger = logger
        attachments = AttachmentStore(databasePath: path)
        hasAttachmentTables = true
        let directory = (path as NSString).deletingLastPathComponent
        commitSync = CommitSync(window: syncWindow, now: syncClock) { [directory] in
            Self.syncLog(path + "-wal", directory: directory.isEmpty ? "." : directory)
        }
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.journalMode = .wal
        config.prepareDatabase { db in
            // A new queue gets its page size and incremental auto-vacuum (so the storage
            // guard can hand freed pages back to the file system without a full VACUUM).
            // SQLite takes both only while the file is empty and before it is switched to
            // WAL, which GRDB does right after this. The one connection does it rather
            // than one of its own: closing a connection hands its clean-up to Dispatch's
            // global queue, whose workers libdispatch then watches with a timer every
            // second for the life of the process (docs/decisions/0001-one-sqlite-connection.md).
            if !db.configuration.readonly, try Int.fetchOne(db, sql: "PRAGMA page_count") == 0 {
                try db.execute(sql: "PRAGMA page_size = \(Self.pageSize)")
                try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
            }
            // Memory (docs/architecture.md#memory): the page cache is held small (SQLite's
            // default is 2 MiB). A cache fills up to its cap and stays full: each maintenance
            // round sums the attachments table, every page of it, and with the default
            // retention that table is larger than the cap (docs/performance.md).
            try db.execute(sql: "PRAGMA cache_size = -\(Self.pageCacheKiB)")
            // Durability (set again once WAL is on, see below):
            // synchronous=FULL makes a commit fsync the WAL before it returns. A record
            // whose enqueue returned survives the process being killed (that needs only
            // NORMAL) and, once fsynced, a power cut or kernel panic; the file stays
            // consistent either way. Captures without a file may commit with NORMAL and
            // wait up to `CommitSync`'s window for a later commit's fsync.
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
            // At most ~1 MiB of WAL waits to be copied into the database (SQLite's
            // default is ~4 MiB): that copy may have to grow the database file, and on a
            // full disk it must fit in the storage guard's reserve (StorageLimits). In
            // pages: 1,024 of a new queue's 1 KiB pages, 256 of an older queue's 4 KiB.
            let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4_096
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(max(64, Self.walCheckpointBytes / max(512, pageSize)))")
        }
        do {
            // At 0 bytes free SQLite cannot even open the database (it must create the
            // -shm and -wal files): hand the storage guard's reserve back first; the
            // guard makes it again once it has made room.
            StorageReserve.releaseIfDiskFull(databasePath: path)
            connection = try DatabaseQueue(path: path, configuration: config)
            // GRDB switches the connection to synchronous=NORMAL when it turns WAL on,
            // after prepareDatabase has run: set FULL again (missed once, commits were then
            // fsynced only at checkpoints; `durability()` and a test keep it from coming back).
            try connection.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            try Schema.migrate(connection)
        } catch let error as QueueError {
            throw error
        } catch {
            // No reserve to hand back (first run, or deleted by hand) and no room: say so
            // with E004's hint rather than SQLite's "disk I/O error".
            if let free = DiskSpace.availableBytes(at: path), free < StorageReserve.fullDiskBytes {
                throw QueueError.storageFull(path: path)
            }
            throw QueueError.cannotOpen(path: path, reason: "\(error)")
        }
    }

    /// Page size of a new queue (docs/queue.md). Each commit appends every page it changed to
    /// the WAL, and a capture changes about five (its row, two index pages, the counts,
    /// the page-1 header), so smaller pages write less to the card for each capture (rows are
    /// a few hundred bytes now that audio is in files; the WAL a fix writes:
    /// docs/performance.md). Set once, when the file is made; a queue made by an earlier
    /// version keeps its 4 KiB pages.
    static let pageSize = 1_024
    /// WAL bytes that wait for a checkpoint, at most.
    static let walCheckpointBytes = 1_048_576
    /// The connection's page cache, at most (`PRAGMA cache_size`, in KiB).
    public static let pageCacheKiB = 256

    /// Opens an existing queue read-only (for `status`): no migration, no writes, and it
    /// works beside a running daemon. Fails when the file does not exist.
    public init(readOnlyPath path: String, clock: any WallClock = SystemClock(), logger: Logger = Logger(.database)) throws {
        self.path = path
        self.clock = clock
        self.logger = logger
        attachments = AttachmentStore(databasePath: path)
        commitSync = CommitSync(window: 0) { true }
        guard FileManager.default.fileExists(atPath: path) else {
            throw QueueError.cannotOpen(path: path, reason: "no such file (the daemon creates it when it first runs)")
        }
        var config = Configuration()
        config.readonly = true
        config.busyMode = .timeout(10)
        do {
            connection = try DatabaseQueue(path: path, configuration: config)
            let version = try connection.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0 }
            if version > Schema.currentVersion {
                throw QueueError.schemaTooNew(found: version, known: Schema.currentVersion)
            }
            hasAttachmentTables = version >= 4
        } catch let error as QueueError {
            throw error
        } catch {
            throw QueueError.cannotOpen(path: path, reason: "\(error)")
        }
    }

    /// The writer's `PRAGMA synchronous`: "full" when every commit fsyncs the WAL before
    /// it returns (what docs/queue.md promises), "normal" when a power cut may undo commits.
    public func durability() throws -> String {
        let level = try connection.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
        return ["off", "normal", "full", "extra"].indices.contains(level) ? ["off", "normal", "full", "extra"][level] : "\(level)"
    }

    /// Runs `PRAGMA integrity_check`; "ok" when the file is sound.
    public func integrityCheck() throws -> String {
        try connection.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ") }
    }

    /// Payload bytes of every record in the queue, whatever its status (kept by triggers).
    public func storedPayloadBytes() throws -> Int64 {
        try connection.read { db in try Int64.fetchOne(db, sql: "SELECT coalesce(sum(bytes), 0) FROM stream_counts") ?? 0 }
    }

    /// Bytes the queue takes on disk: the database, its WAL and the attachment files.
    public func fileBytes() -> Int64 {
        Self.size(of: path) + Self.size(of: path + "-wal") + (hasAttachmentTables ? attachments.totalBytes(connection) : 0)
    }

    // MARK: The files

    /// Bytes of the WAL file now.
    public func walBytes() -> Int64 { Self.size(of: path + "-wal") }

    static func size(of file: String) -> Int64 {
        var info = stat()
        return stat(file, &info) == 0 ? Int64(info.st_size) : 0
    }

    static func checkpoint(_ db: Database, keepingFile: Bool) throws {
        do {
            _ = try db.checkpoint(keepingFile ? .passive : .truncate)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
            return
        }
    }

    /// The database's page size (1 KiB for a queue made since schema 4, 4 KiB before).
    public func pageSize() throws -> Int {
        try connection.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4_096 }
    }

    // MARK: Commits

    /// One transaction, fsynced before it returns (the writer's synchronous=FULL), which
    /// takes every capture that waited for an fsync to the disk with it: `commitSync` hears
    /// so, and the next maintenance round finds nothing to sync (an upload cycle's marks
    /// followed by a sync of their own would cost a second fsync).
    func fsyncedWrite(_ body: (Database) throws -> Void) throws {
        try connection.writeWithoutTransaction { db in
            try db.inTransaction { try body(db); return .commit }
            commitSync.committed(synced: true)
        }
    }

    /// Commits a capture in one transaction, fsynced with the commit or left to wait for a
    /// later fsync as `commitSync` decides (the writer connection stays FULL otherwise).
    func capturing(hasFile: Bool, _ body: (Database) throws -> Void) throws {
        try connection.writeWithoutTransaction { db in
            let synced = commitSync.mustSync(hasFile: hasFile)
            if synced {
                try db.inTransaction { try body(db); return .commit }
            } else {
                try Self.withoutFsync(db) { try db.inTransaction { try body(db); return .commit } }
            }
            commitSync.committed(synced: synced)
        }
    }

    /// Runs `body` on the writer with synchronous=NORMAL (its commit does not wait for an
    /// fsync) and sets FULL back; a failure to set it back is an error, since every later
    /// commit would otherwise skip its fsync unseen.
    static func withoutFsync(_ db: Database, _ body: () throws -> Void) throws {
        try db.execute(sql: "PRAGMA synchronous = NORMAL")
        do {
            try body()
        } catch {
            try? db.execute(sql: "PRAGMA synchronous = FULL")
            throw error
        }
        try db.execute(sql: "PRAGMA synchronous = FULL")
    }

    /// fsyncs the WAL when a capture has waited for it at least `age` seconds (0: any): the
    /// maintenance round, a clean stop and the uploader's reads (docs/queue.md, Durability). On the
    /// writer, in order with the commits. False when a sync was due and failed.
    @discardableResult
    public func syncWaitingCaptures(waitedAtLeast age: TimeInterval = 0) -> Bool {
        guard commitSync.isWaiting else { return true }
        let synced = connection.writeWithoutTransaction { _ in commitSync.flush(waitedAtLeast: age) }
        if !synced {
            logger.error("cannot fsync the queue's WAL; the captures committed since the last fsync wait for the next one",
                         metadata: ["path": "\(path)-wal"])
        }
        return synced
    }

    /// The WAL's fsync outside a commit: its data, and its directory entry (the WAL is made
    /// anew at each start, and an fsynced commit would sync its directory the first time).
    private static func syncLog(_ wal: String, directory: String) -> Bool {
        guard FileWrites.syncFile(wal) else { return false }
        FileWrites.syncDirectory(directory)
        return true
    }

    /// Maps SQLite's "disk full" to the user's E004.
    func writing(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as DatabaseError where error.resultCode == .SQLITE_FULL {
            storagePressure.raise()
            logger.error("\(AgentErrorCode.storageFull.rawValue) database write failed: disk full", metadata: ["path": "\(path)"])
            throw QueueError.storageFull(path: path)
        } catch let error as QueueError where QueueError.isStorageFull(error) {
            // An attachment file that found no room (AttachmentStore.place).
            storagePressure.raise()
            logger.error("\(AgentErrorCode.storageFull.rawValue) attachment write failed: disk full", metadata: ["path": "\(path)"])
            throw error
        }
    }
}
