import Foundation
import Rigs

/// Rewrites a queue written by this agent into the layout an earlier agent left, to test
/// the migrations forward: schema 5 (no coverage ledger), 4 (no time evidence), 3 (payloads in their own table,
/// no attachments), 2 (payloads in the rows) or 1 (no held records either). Needs
/// python3's sqlite3.
public enum OlderQueue {
    public static func downgrade(_ path: String, to version: Int, logDirectory: String) throws {
        precondition((1...5).contains(version), "schemas 1 to 5 only")
        let script = try ChildProcess("python3", ["-c", """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            version = int(sys.argv[2])
            c.executescript("DROP TABLE coverage_spans;")
            if version <= 4:
              c.executescript("DROP TABLE time_evidence;")
            if version <= 3:
              c.executescript('''
                DROP TRIGGER records_attachment_delete; DROP TABLE attachments; DROP TABLE attachment_trash;
                DROP INDEX records_by_status_changed;
                CREATE INDEX records_by_status_changed ON records (status, status_changed_at);
                INSERT INTO payloads (seq, data) SELECT seq, payload FROM records;
                UPDATE records SET payload = X'';''')
            if version <= 2:
                c.executescript('''
                    UPDATE records SET payload = (SELECT data FROM payloads WHERE payloads.seq = records.seq);
                    DROP TABLE payloads;''')
            if version <= 1:
                c.executescript("DROP TABLE provisional_times;")
            c.execute("PRAGMA user_version = %d" % version)
            c.commit()
            c.close()
            """, path, "\(version)"], logDirectory: logDirectory)
        guard script.wait() == 0 else {
            throw RigFailure("cannot rewrite \(path) as schema \(version): \(script.stderr())")
        }
    }
}
