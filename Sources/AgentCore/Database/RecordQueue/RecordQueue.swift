import Foundation
import GRDB

/// The store of the records (docs/queue.md): what the capture streams write (`RecordSink`,
/// with each health source's anchor), what the uploader reads and marks (`UploadQueue`,
/// with each stream's upload stats), the records held back until their time is known,
/// and the reads of `status`, `export` and the tests. A `DatabaseStore`: its writes take
/// turns with every other on the database's connection, and a capture's commit reaches
/// the disk as the database's `CommitSync` decides.
public struct RecordQueue: DatabaseStore, RecordSink, UploadQueue {
    public let database: AgentDatabase

    public init(_ database: AgentDatabase) {
        self.database = database
    }

    // MARK: RecordSink

    public func enqueue(_ record: NewRecord) throws {
        try enqueue([record], anchor: nil)
    }

    public func enqueue(_ records: [NewRecord], anchor: SourceAnchor?) throws {
        let room = database.captureRoom.room
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
        database.captureRoom.room = room
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
                try writing { try database.attachments.place(attachment, name: name) }
                names[index] = name
            }
            try insert(records, attachmentNames: names, anchor: anchor, now: now)
        } catch {
            names.values.forEach(database.attachments.discard)
            throw error
        }
    }

    private func insert(_ records: [NewRecord], attachmentNames: [Int: String], anchor: SourceAnchor?, now: TimeInterval) throws {
        try writing {
            try database.capturing(hasFile: !attachmentNames.isEmpty) { db in
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
        database.syncWaitingCaptures()
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
        database.syncWaitingCaptures()
        return try connection.read { db in
            try Row.fetchOne(db, sql: "SELECT \(recordColumns) FROM \(recordsWithPayloads) WHERE stream = ? AND status = 'pending' AND \(Self.notHeld) ORDER BY r.seq DESC LIMIT 1",
                             arguments: [stream.rawValue]).map(record(from:))
        }
    }

    /// Delivered: the server stored these (the records alone; the uploader's form also
    /// writes the stream's upload stats in the same transaction).
    public func markDelivered(_ seqs: [Int64]) throws {
        let now = clock.now().timeIntervalSince1970
        try update(seqs, sql: Self.setUploadedSQL) { [now, now, $0] }
    }

    /// The one statement that makes records `uploaded`, the queue's word for delivered (both
    /// forms of `markDelivered`): its arguments are the time twice and the seq.
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

    // MARK: Helpers

    private func update(_ seqs: [Int64], sql: String, arguments: (Int64) -> [(any DatabaseValueConvertible)?]) throws {
        guard !seqs.isEmpty else { return }
        try writing {
            try database.fsyncedWrite { db in try Self.execute(sql, for: seqs, in: db, arguments: arguments) }
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

    /// Where a record, its payload and its attachment are read from: the payload's own
    /// table, or the row itself for a row written before schema 3. Use both together,
    /// reading with `record(from:)`; the records table is `r`.
    var recordsWithPayloads: String {
        "records r LEFT JOIN payloads pl ON pl.seq = r.seq"
            + (database.hasAttachmentTables ? " LEFT JOIN attachments a ON a.seq = r.seq" : "")
    }
    var recordColumns: String {
        "r.*, pl.data AS stored_payload"
            + (database.hasAttachmentTables ? ", a.field AS attachment_field, a.file AS attachment_file" : "")
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
            if let whole = database.attachments.payload(payload, field: field, name: file) {
                payload = whole
            } else {
                logger.error("\(AgentErrorCode.attachmentMissing.rawValue) the attachment of a queued record is missing; it is sent without it and the server will refuse it",
                             metadata: ["seq": "\(row["seq"] as Int64)", "file": "\(database.attachments.path(file))"])
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

extension AgentDatabase {
    /// The records: captures, the uploader's batches and marks, held records, export reads.
    public var recordQueue: RecordQueue { RecordQueue(self) }
}
