import GRDB

/// The database schema, versioned with `PRAGMA user_version`. Each migration moves the
/// schema forward by one version inside one transaction; a database newer than this
/// build knows is refused rather than guessed at.
enum Schema {
    /// Migration N (1-based) is `migrations[N-1]`. Append only; never edit a released one.
    static let migrations: [String] = [v1, v2, v3, v4, v5, v6]

    static var currentVersion: Int { migrations.count }

    static let v1 = """
    -- The queue: the only buffer between capture and upload. `seq` is the order.
    CREATE TABLE records (
        seq               INTEGER PRIMARY KEY AUTOINCREMENT,
        stream            TEXT    NOT NULL,
        record_id         BLOB    NOT NULL UNIQUE,   -- the record's UUID, 16 bytes
        captured_at       REAL    NOT NULL,          -- unix seconds
        enqueued_at       REAL    NOT NULL,
        payload           BLOB    NOT NULL,          -- the record's JSON object, UTF-8
        payload_bytes     INTEGER NOT NULL,
        status            TEXT    NOT NULL DEFAULT 'pending'
                                  CHECK (status IN ('pending', 'uploaded', 'failed')),
        status_changed_at REAL    NOT NULL,
        upload_attempts   INTEGER NOT NULL DEFAULT 0,
        last_attempt_at   REAL,
        last_error        TEXT
    );
    -- "Pending records of a stream, oldest first" and the oldest pending age.
    CREATE INDEX records_by_stream_status_seq ON records (stream, status, seq);
    -- Retention ("uploaded/failed older than N days") and the storage guard.
    CREATE INDEX records_by_status_changed ON records (status, status_changed_at);

    -- Counts and bytes per stream and status, kept by triggers so `status` reads a few
    -- rows instead of counting a million.
    CREATE TABLE stream_counts (
        stream TEXT    NOT NULL,
        status TEXT    NOT NULL,
        n      INTEGER NOT NULL,
        bytes  INTEGER NOT NULL,
        PRIMARY KEY (stream, status)
    ) WITHOUT ROWID;
    CREATE TRIGGER records_count_insert AFTER INSERT ON records BEGIN
        INSERT INTO stream_counts (stream, status, n, bytes) VALUES (NEW.stream, NEW.status, 1, NEW.payload_bytes)
        ON CONFLICT (stream, status) DO UPDATE SET n = n + 1, bytes = bytes + excluded.bytes;
    END;
    CREATE TRIGGER records_count_delete AFTER DELETE ON records BEGIN
        UPDATE stream_counts SET n = n - 1, bytes = bytes - OLD.payload_bytes
        WHERE stream = OLD.stream AND status = OLD.status;
    END;
    CREATE TRIGGER records_count_update AFTER UPDATE OF status ON records
    WHEN OLD.status <> NEW.status BEGIN
        UPDATE stream_counts SET n = n - 1, bytes = bytes - OLD.payload_bytes
        WHERE stream = OLD.stream AND status = OLD.status;
        INSERT INTO stream_counts (stream, status, n, bytes) VALUES (NEW.stream, NEW.status, 1, NEW.payload_bytes)
        ON CONFLICT (stream, status) DO UPDATE SET n = n + 1, bytes = bytes + excluded.bytes;
    END;

    -- Where a health source has read up to, written in the same transaction as the
    -- records it produced (exactly once across restarts).
    CREATE TABLE source_anchors (
        source     TEXT    PRIMARY KEY,
        device     INTEGER NOT NULL,
        inode      INTEGER NOT NULL,
        offset     INTEGER NOT NULL,
        line       INTEGER NOT NULL,
        extra      TEXT,                             -- source-specific JSON (e.g. a CSV header)
        updated_at REAL    NOT NULL
    ) WITHOUT ROWID;

    -- The last health of each stream and of the uploader, for `status`.
    CREATE TABLE component_health (
        component  TEXT PRIMARY KEY,
        state      TEXT NOT NULL,
        reason     TEXT,
        code       TEXT,
        checked_at REAL NOT NULL
    ) WITHOUT ROWID;

    -- Upload bookkeeping per stream, for `status`.
    CREATE TABLE upload_stats (
        stream            TEXT PRIMARY KEY,
        last_attempt_at   REAL,
        last_success_at   REAL,
        last_result       TEXT,
        last_error_code   TEXT,
        records_sent      INTEGER NOT NULL DEFAULT 0,
        bytes_sent        INTEGER NOT NULL DEFAULT 0
    ) WITHOUT ROWID;

    -- Small named state that outlives a restart (pause switches, auth pause, ...).
    CREATE TABLE agent_state (
        key        TEXT PRIMARY KEY,
        value      TEXT NOT NULL,
        updated_at REAL NOT NULL
    ) WITHOUT ROWID;

    -- Things that happened that a user should hear of (storage guard deletions, ...).
    CREATE TABLE events (
        id      INTEGER PRIMARY KEY AUTOINCREMENT,
        at      REAL NOT NULL,
        code    TEXT,
        message TEXT NOT NULL
    );
    """

    static let v2 = """
    -- Records captured while the system clock could not be believed (before NTP, or a
    -- clock restored from the last shutdown): a row here holds the record back from
    -- upload until the daemon has worked out its true time from the boot clock
    -- (ClockCorrection), rewritten its times and deleted the row. A side table keeps
    -- `records` and its hot paths as they were.
    CREATE TABLE provisional_times (
        seq       INTEGER PRIMARY KEY REFERENCES records (seq) ON DELETE CASCADE,
        stream    TEXT    NOT NULL,
        boot_id   TEXT    NOT NULL,                  -- /proc/sys/kernel/random/boot_id at capture
        boot_time REAL    NOT NULL                   -- CLOCK_BOOTTIME seconds at captured_at
    );
    CREATE INDEX provisional_times_by_boot ON provisional_times (boot_id, seq);
    CREATE INDEX provisional_times_by_stream ON provisional_times (stream);
    """

    static let v3 = """
    -- Each record's payload in a table of its own: marking a record (its last
    -- attempt, uploaded, failed) then rewrites a small row, not the 80 KB of an audio
    -- chunk's overflow pages, twice per upload. Rows written before this version keep their
    -- payload in records.payload; new rows leave it empty (X'').
    CREATE TABLE payloads (
        seq  INTEGER PRIMARY KEY REFERENCES records (seq) ON DELETE CASCADE,
        data BLOB    NOT NULL
    );
    """

    static let v4 = """
    -- A record's attachment: the bytes whose base64 goes under `field` in the
    -- record's JSON object when a request is built (a chunk's Ogg Opus audio). They stay a
    -- file of their own in `<database>.attachments/`, written once (the microphone's
    -- finished journal file is linked in, not copied), instead of going through the WAL and
    -- the database as base64 text. The row is deleted with its record (trigger below);
    -- its file name goes to `attachment_trash`, in the same transaction, and the file is
    -- unlinked after the commit (`AttachmentStore`): a crash in between leaves a name in the
    -- trash, never a record without its file.
    CREATE TABLE attachments (
        seq   INTEGER PRIMARY KEY,                   -- the record's seq
        field TEXT    NOT NULL,                      -- the payload key, e.g. audio_data
        file  TEXT    NOT NULL,                      -- file name in <database>.attachments/
        bytes INTEGER NOT NULL                       -- the file's size
    );
    CREATE TABLE attachment_trash (
        file TEXT PRIMARY KEY
    ) WITHOUT ROWID;
    CREATE TRIGGER records_attachment_delete AFTER DELETE ON records BEGIN
        INSERT OR IGNORE INTO attachment_trash (file) SELECT file FROM attachments WHERE seq = OLD.seq;
        DELETE FROM attachments WHERE seq = OLD.seq;
    END;

    -- Fewer pages per capture: every record is inserted pending, and the index
    -- of retention and the storage guard is only ever asked about settled records, so it
    -- leaves pending ones out (queries on it say `status <> 'pending'`, which is how SQLite
    -- knows it may use it). A new record's payload goes back into its row: with the audio
    -- in files, payloads are a few hundred bytes, and a second table was one more page
    -- per insert. Rows of schema 3 keep theirs in `payloads`, read as before.
    DROP INDEX records_by_status_changed;
    CREATE INDEX records_by_status_changed ON records (status, status_changed_at) WHERE status <> 'pending';
    """

    static let v5 = """
    -- What ties this boot's clock (CLOCK_BOOTTIME) to true time: a gpsd 3D fix, or the
    -- system clock while NTP kept it (TimeEvidenceStore). Kept so that the processes that
    -- come after the daemon in the same boot (`sync`, the next start) can correct the
    -- records it held, and, after a reboot, the records that boot still holds. One row per
    -- boot, kept while the boot has held records: a record is corrected only from the
    -- evidence of the boot it was captured in.
    CREATE TABLE time_evidence (
        boot_id    TEXT PRIMARY KEY,                 -- /proc/sys/kernel/random/boot_id
        boot_time  REAL NOT NULL,                    -- CLOCK_BOOTTIME seconds when true_time was seen
        true_time  REAL NOT NULL,                    -- unix seconds
        source     TEXT NOT NULL                     -- e.g. gpsd 3D fix
    ) WITHOUT ROWID;
    """

    static let v6 = """
    -- The coverage ledger (CoverageLedger, docs/operations.md#coverage): for each stream,
    -- spans of time with what it was doing (captured, or why not). Written when a state
    -- changes, never on a timer; the open span of a stream has no end yet. Kept as long
    -- as uploaded records (`retention_days`).
    CREATE TABLE coverage_spans (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        stream     TEXT    NOT NULL,
        state      TEXT    NOT NULL,                 -- a CoverageState raw value
        started_at REAL    NOT NULL,                 -- unix seconds
        ended_at   REAL                              -- NULL while open
    );
    CREATE INDEX coverage_spans_by_stream ON coverage_spans (stream, started_at);
    """

    /// Brings the database to `currentVersion`.
    static func migrate(_ writer: some DatabaseWriter) throws {
        let found = try writer.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0 }
        if found > currentVersion {
            throw QueueError.schemaTooNew(found: found, known: currentVersion)
        }
        if found == currentVersion { return }
        for version in (found + 1)...currentVersion {
            try writer.write { db in
                try db.execute(sql: migrations[version - 1])
                try db.execute(sql: "PRAGMA user_version = \(version)")
            }
        }
    }
}
