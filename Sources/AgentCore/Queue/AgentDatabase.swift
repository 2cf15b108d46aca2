import Foundation
import GRDB
import Logging
import Platform

/// The agent's database: one SQLite file in WAL mode, written by one process (the daemon)
/// and read by any number of others (`status`) at the same time. It owns the connection,
/// the schema (`Schema`), when commits reach the disk (`CommitSync`) and the attachment
/// files, and is the record queue (`RecordSink`, `UploadQueue`); the stores over it share
/// its connection: `housekeeping` (retention, eviction, compaction, purge, the attachment
/// sweep), `agentState` (named values, liveness, time evidence, events) and
/// `PauseSwitches` (docs/queue.md).
///
/// Each process holds one connection (a GRDB `DatabaseQueue`): its reads and writes take
/// turns on that connection's serial Dispatch queue. Not a `DatabasePool`: the pool hands
/// out its readers through concurrent Dispatch queues, and two threads meeting there (an
/// upload reading while a liveness check reads) put the waiting one on Dispatch's default
/// global queue, whose workers libdispatch then watches with a timer every second for the
/// life of the process (docs/decisions/0001-one-sqlite-connection.md). One connection also holds one page cache.
public final class AgentDatabase: RecordSink, UploadQueue, @unchecked Sendable {
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
                logger: Logger = Logger(label: "ariata.queue")) throws {
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
            // Memory (docs/architecture.md): the page cache is held to 1 MiB (SQLite's default
            // is 2 MiB).
            try db.execute(sql: "PRAGMA cache_size = -1024")
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
    /// the page-1 header): with SQLite's default 4 KiB pages a location fix cost about 30 KB
    /// written to the card; with 1 KiB pages, about 13 KB (rows are a few hundred bytes now
    /// that audio is in files). Set once, when the file is made; a queue made by an earlier
    /// version keeps its 4 KiB pages.
    static let pageSize = 1_024
    /// WAL bytes that wait for a checkpoint, at most.
    static let walCheckpointBytes = 1_048_576

    /// Opens an existing queue read-only (for `status`): no migration, no writes, and it
    /// works beside a running daemon. Fails when the file does not exist.
    public init(readOnlyPath path: String, clock: any WallClock = SystemClock(), logger: Logger = Logger(label: "ariata.queue")) throws {
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

    // MARK: RecordSink

    public func enqueue(_ record: NewRecord) throws {
        try enqueue([record], anchor: nil)
    }

    public func enqueue(_ records: [NewRecord], anchor: SourceAnchor?) throws {
        let room = captureRoom.room
        let bytes = records.reduce(Int64(0)) { $0 + Int64(Self.wireBytes(of: $1)) }
        room?.makeRoom(forCaptureBytes: bytes, refused: false)
        do {
            try write(records, anchor: anchor)
        } catch where QueueError.isStorageFull(error) {
            // The disk had less room than it showed (or another program took the last of
            // it): one more try once the guard has made room for this capture.
            guard let room, room.makeRoom(forCaptureBytes: bytes, refused: true) else { throw error }
            try write(records, anchor: anchor)
        }
    }

    /// Lets `room` make space before each capture is written (held weakly).
    public func makeRoom(through room: any CaptureRoom) {
        captureRoom.room = room
    }

    /// What a record weighs in a request body, its attachment's base64 included: its
    /// `payload_bytes`, the measure of the storage guard's ring.
    static func wireBytes(of record: NewRecord) -> Int {
        record.payload.count + (record.attachment.map { AttachmentStore.wireBytes(field: $0.field, bytes: $0.data.count) } ?? 0)
    }

    private func write(_ records: [NewRecord], anchor: SourceAnchor?) throws {
        let now = clock.now().timeIntervalSince1970
        // Attachments are durable files before the transaction that names them commits
        // (AttachmentStore); should the commit fail, they go again.
        var names: [Int: String] = [:]
        do {
            for (index, record) in records.enumerated() {
                guard let attachment = record.attachment else { continue }
                let name = AttachmentStore.newName(id: record.id, fileExtension: attachment.fileExtension)
                try writing { try attachments.place(attachment, name: name) }
                names[index] = name
            }
            try insert(records, attachmentNames: names, anchor: anchor, now: now)
        } catch {
            names.values.forEach(attachments.discard)
            throw error
        }
    }

    private func insert(_ records: [NewRecord], attachmentNames: [Int: String], anchor: SourceAnchor?, now: TimeInterval) throws {
        try writing {
            try capturing(hasFile: !attachmentNames.isEmpty) { db in
                let insert = try db.cachedStatement(sql: """
                    INSERT INTO records (stream, record_id, captured_at, enqueued_at, payload, payload_bytes, status_changed_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """)
                for (index, record) in records.enumerated() {
                    try insert.execute(arguments: [
                        record.stream.rawValue, record.id, record.capturedAt.timeIntervalSince1970,
                        now, record.payload, Self.wireBytes(of: record), now,
                    ])
                    let seq = db.lastInsertedRowID
                    if let attachment = record.attachment, let name = attachmentNames[index] {
                        try db.execute(sql: "INSERT INTO attachments (seq, field, file, bytes) VALUES (?, ?, ?, ?)",
                                       arguments: [seq, attachment.field, name, attachment.data.count])
                    }
                    if let provisional = record.provisional {
                        try holdProvisional(db, seq: seq, stream: record.stream, provisional)
                    }
                }
                if let anchor {
                    try db.execute(sql: """
                        INSERT INTO source_anchors (source, device, inode, offset, line, extra, updated_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT (source) DO UPDATE SET device = excluded.device, inode = excluded.inode,
                            offset = excluded.offset, line = excluded.line, extra = excluded.extra,
                            updated_at = excluded.updated_at
                        """, arguments: [anchor.source, Int64(bitPattern: anchor.device), Int64(bitPattern: anchor.inode),
                                         anchor.offset, anchor.line, anchor.extra, now])
                }
            }
        }
    }

    /// The stored anchor of a health source, if it has one.
    public func anchor(for source: String) throws -> SourceAnchor? {
        try connection.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM source_anchors WHERE source = ?", arguments: [source]) else {
                return nil
            }
            return SourceAnchor(source: row["source"],
                                device: UInt64(bitPattern: row["device"]),
                                inode: UInt64(bitPattern: row["inode"]),
                                offset: row["offset"], line: row["line"], extra: row["extra"])
        }
    }

    // MARK: UploadQueue

    public func streamsWithPending() throws -> [StreamName] {
        try connection.read { db in
            // Held records (provisional_times) are pending but not for the uploader yet.
            try String.fetchAll(db, sql: """
                SELECT c.stream FROM stream_counts c WHERE c.status = 'pending'
                    AND c.n > (SELECT count(*) FROM provisional_times p WHERE p.stream = c.stream)
                ORDER BY c.stream
                """).compactMap(StreamName.init(rawValue:))
        }
    }

    public func pendingBatch(stream: StreamName, maxCount: Int, maxBytes: Int) throws -> [QueuedRecord] {
        // Nothing goes to the server that a power cut could still take back from the queue.
        // A sync that fails is logged and the batch goes all the same: the records are
        // safer on the server than on a disk that refuses fsync.
        syncWaitingCaptures()
        return try connection.read { db in
            // A cursor steps one row at a time, so payloads past the byte bound are never read.
            let rows = try Row.fetchCursor(db, sql: """
                SELECT \(recordColumns) FROM \(recordsWithPayloads) WHERE stream = ? AND status = 'pending' AND \(Self.notHeld) ORDER BY r.seq LIMIT ?
                """, arguments: [stream.rawValue, max(1, maxCount)])
            var batch: [QueuedRecord] = []
            var bytes = 0
            while let row = try rows.next() {
                let size: Int = row["payload_bytes"]
                if !batch.isEmpty && bytes + size > maxBytes { break }
                batch.append(try record(from: row))
                bytes += size
            }
            return batch
        }
    }

    public func newestPending(stream: StreamName) throws -> QueuedRecord? {
        syncWaitingCaptures()
        return try connection.read { db in
            try Row.fetchOne(db, sql: "SELECT \(recordColumns) FROM \(recordsWithPayloads) WHERE stream = ? AND status = 'pending' AND \(Self.notHeld) ORDER BY r.seq DESC LIMIT 1",
                             arguments: [stream.rawValue]).map(record(from:))
        }
    }

    public func markUploaded(_ seqs: [Int64]) throws {
        let now = clock.now().timeIntervalSince1970
        try update(seqs, sql: Self.setUploadedSQL) { [now, now, $0] }
    }

    /// The one statement that makes records `uploaded` (`markUploaded`, `markDelivered`):
    /// its arguments are the time twice and the seq.
    static let setUploadedSQL = """
        UPDATE records SET status = 'uploaded', status_changed_at = ?, last_attempt_at = ?, last_error = NULL
        WHERE seq = ? AND status = 'pending'
        """

    public func recordFailedAttempt(_ seqs: [Int64], error: String) throws {
        let now = clock.now().timeIntervalSince1970
        try update(seqs, sql: """
            UPDATE records SET upload_attempts = upload_attempts + 1, last_attempt_at = ?, last_error = ?,
                status = CASE WHEN upload_attempts + 1 >= ? THEN 'failed' ELSE status END,
                status_changed_at = CASE WHEN upload_attempts + 1 >= ? THEN ? ELSE status_changed_at END
            WHERE seq = ? AND status = 'pending'
            """) { [now, error, QueuePolicy.maxAttempts, QueuePolicy.maxAttempts, now, $0] }
    }

    public func noteAttempt(_ seqs: [Int64], error: String) throws {
        let now = clock.now().timeIntervalSince1970
        try update(seqs, sql: """
            UPDATE records SET last_attempt_at = ?, last_error = ? WHERE seq = ? AND status = 'pending'
            """) { [now, error, $0] }
    }

    public func markFailed(_ seqs: [Int64], error: String) throws {
        let now = clock.now().timeIntervalSince1970
        try update(seqs, sql: """
            UPDATE records SET status = 'failed', status_changed_at = ?, last_attempt_at = ?, last_error = ?,
                upload_attempts = upload_attempts + 1
            WHERE seq = ? AND status = 'pending'
            """) { [now, now, error, $0] }
    }

    // MARK: Reading for status and tests

    /// Counts and payload bytes per stream and status (kept by triggers: O(streams)).
    public func counts() throws -> [StreamCount] {
        try connection.read { db in
            try Row.fetchAll(db, sql: "SELECT stream, status, n, bytes FROM stream_counts WHERE n > 0 ORDER BY stream, status")
                .compactMap { row in
                    guard let stream = StreamName(rawValue: row["stream"]),
                          let status = RecordStatus(rawValue: row["status"]) else { return nil }
                    return StreamCount(stream: stream, status: status, records: row["n"], bytes: row["bytes"])
                }
        }
    }

    public func count(stream: StreamName, status: RecordStatus) throws -> Int {
        try counts().first { $0.stream == stream && $0.status == status }?.records ?? 0
    }

    /// Capture time of the oldest pending record of `stream` that is not held (a held
    /// record's time is provisional), nil when none is pending.
    public func oldestPendingCapture(stream: StreamName) throws -> Date? {
        try connection.read { db in
            try Double.fetchOne(db, sql: """
                SELECT captured_at FROM records r WHERE stream = ? AND status = 'pending' AND \(Self.notHeld) ORDER BY seq LIMIT 1
                """, arguments: [stream.rawValue]).map(Date.init(timeIntervalSince1970:))
        }
    }

    /// Age in seconds of the oldest pending record of `stream`.
    public func oldestPendingAge(stream: StreamName) throws -> TimeInterval? {
        try oldestPendingCapture(stream: stream).map { clock.now().timeIntervalSince($0) }
    }

    /// Capture time of the newest record of `stream` still in the queue, whatever its status.
    public func lastCapture(stream: StreamName) throws -> Date? {
        try connection.read { db in
            try RecordStatus.allCases.compactMap { status in
                try Double.fetchOne(db, sql: """
                    SELECT captured_at FROM records WHERE stream = ? AND status = ? ORDER BY seq DESC LIMIT 1
                    """, arguments: [stream.rawValue, status.rawValue])
            }.max().map(Date.init(timeIntervalSince1970:))
        }
    }

    /// All records of a stream in queue order (tests and diagnostics; not for big queues).
    public func records(stream: StreamName, status: RecordStatus? = nil) throws -> [QueuedRecord] {
        try connection.read { db in
            var sql = "SELECT \(recordColumns) FROM \(recordsWithPayloads) WHERE stream = ?"
            var arguments: StatementArguments = [stream.rawValue]
            if let status {
                sql += " AND status = ?"
                arguments += [status.rawValue]
            }
            return try Row.fetchAll(db, sql: sql + " ORDER BY r.seq", arguments: arguments).map(record(from:))
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

    // MARK: Helpers

    private func update(_ seqs: [Int64], sql: String, arguments: (Int64) -> [(any DatabaseValueConvertible)?]) throws {
        guard !seqs.isEmpty else { return }
        try writing {
            try fsyncedWrite { db in try Self.execute(sql, for: seqs, in: db, arguments: arguments) }
        }
    }

    /// Runs `sql` once per seq, in the caller's transaction.
    static func execute(_ sql: String, for seqs: [Int64], in db: Database,
                        arguments: (Int64) -> [(any DatabaseValueConvertible)?]) throws {
        let statement = try db.cachedStatement(sql: sql)
        for seq in seqs {
            try statement.execute(arguments: StatementArguments(arguments(seq)))
        }
    }

    /// One transaction, fsynced before it returns (the writer's synchronous=FULL), which
    /// takes every capture that waited for an fsync to the disk with it: `commitSync` hears
    /// so, and the next liveness check finds nothing to sync (an upload cycle's marks
    /// followed by a sync of their own would cost a second fsync).
    func fsyncedWrite(_ body: (Database) throws -> Void) throws {
        try connection.writeWithoutTransaction { db in
            try db.inTransaction { try body(db); return .commit }
            commitSync.committed(synced: true)
        }
    }

    /// Commits a capture in one transaction, fsynced with the commit or left to wait for a
    /// later fsync as `commitSync` decides (the writer connection stays FULL otherwise).
    private func capturing(hasFile: Bool, _ body: (Database) throws -> Void) throws {
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
    /// liveness check, a clean stop and the uploader's reads (docs/queue.md, Durability). On the
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

    /// Where a record, its payload and its attachment are read from: the payload's own
    /// table, or the row itself for a row written before schema 3. Use both together,
    /// reading with `record(from:)`; the records table is `r`.
    var recordsWithPayloads: String {
        "records r LEFT JOIN payloads pl ON pl.seq = r.seq"
            + (hasAttachmentTables ? " LEFT JOIN attachments a ON a.seq = r.seq" : "")
    }
    var recordColumns: String {
        "r.*, pl.data AS stored_payload"
            + (hasAttachmentTables ? ", a.field AS attachment_field, a.file AS attachment_file" : "")
    }

    /// The record of a row read through `recordsWithPayloads`: its payload is the JSON object
    /// as the ingest contract wants it, with the attachment's bytes in (base64). A record
    /// whose attachment file is gone (deleted by hand) reads without them, with an error
    /// logged: the server then refuses it and the uploader sets it apart as failed.
    func record(from row: Row) throws -> QueuedRecord {
        let streamName: String = row["stream"]
        let statusName: String = row["status"]
        guard let stream = StreamName(rawValue: streamName), let status = RecordStatus(rawValue: statusName) else {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "unknown stream or status in row \(row)")
        }
        var payload: Data = (row["stored_payload"] as Data?) ?? row["payload"]
        if let field = row["attachment_field"] as String?, let file = row["attachment_file"] as String? {
            if let whole = attachments.payload(payload, field: field, name: file) {
                payload = whole
            } else {
                logger.error("\(AgentErrorCode.attachmentMissing.rawValue) the attachment of a queued record is missing; it is sent without it and the server will refuse it",
                             metadata: ["seq": "\(row["seq"] as Int64)", "file": "\(attachments.path(file))"])
            }
        }
        return QueuedRecord(
            seq: row["seq"], id: row["record_id"], stream: stream,
            capturedAt: Date(timeIntervalSince1970: row["captured_at"]),
            payload: payload, status: status, uploadAttempts: row["upload_attempts"],
            lastAttemptAt: (row["last_attempt_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
            lastError: row["last_error"])
    }
}
