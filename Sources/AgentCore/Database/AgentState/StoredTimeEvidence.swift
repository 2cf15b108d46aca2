import Foundation
import GRDB
import Platform

/// The `time_evidence` table (schema 5): a boot's link between the boot clock and true
/// time, for the processes that come after the one that learnt it, in the same boot or,
/// for the records that boot still holds, after a reboot.
extension AgentStateStore {
    /// Boot `bootID`'s stored evidence; nil when there is none. Works on a read-only queue,
    /// and a database from before schema 5 has none.
    public func storedTimeEvidence(bootID: String) throws -> TimeEvidence.Sample? {
        try connection.read { db in
            guard try db.tableExists("time_evidence"),
                  let row = try Row.fetchOne(db, sql: "SELECT boot_time, true_time, source FROM time_evidence WHERE boot_id = ?",
                                             arguments: [bootID]) else { return nil }
            return TimeEvidence.Sample(trueTime: Date(timeIntervalSince1970: row["true_time"]),
                                       boot: BootInstant(bootID: bootID, seconds: row["boot_time"]), source: row["source"])
        }
    }

    /// The stored evidence of every boot other than `bootID` that still has held records:
    /// what corrects them after a reboot.
    public func storedTimeEvidence(ofBootsOtherThan bootID: String) throws -> [TimeEvidence.Sample] {
        try connection.read { db in
            guard try db.tableExists("time_evidence") else { return [] }
            return try Row.fetchAll(db, sql: """
                SELECT boot_id, boot_time, true_time, source FROM time_evidence e WHERE boot_id <> ?
                    AND EXISTS (SELECT 1 FROM provisional_times p WHERE p.boot_id = e.boot_id)
                """, arguments: [bootID]).map { row in
                TimeEvidence.Sample(trueTime: Date(timeIntervalSince1970: row["true_time"]),
                                    boot: BootInstant(bootID: row["boot_id"], seconds: row["boot_time"]), source: row["source"])
            }
        }
    }

    /// Keeps `sample` as its boot's evidence, in place of what was there. Other boots' rows
    /// go once no record of theirs is held: they correct nothing else.
    ///
    /// Committed without an fsync of its own: the evidence is of use only in this boot, and
    /// a commit in the page cache outlives the process (a kill, a restart, `sync`); a power
    /// cut ends the boot, and the evidence's use with it.
    public func storeTimeEvidence(_ sample: TimeEvidence.Sample) throws {
        try writing {
            try connection.writeWithoutTransaction { db in
                try AgentDatabase.withoutFsync(db) {
                    try db.inTransaction {
                        try db.execute(sql: """
                            DELETE FROM time_evidence WHERE boot_id <> ?
                                AND boot_id NOT IN (SELECT boot_id FROM provisional_times)
                            """, arguments: [sample.boot.bootID])
                        try db.execute(sql: """
                            INSERT INTO time_evidence (boot_id, boot_time, true_time, source) VALUES (?, ?, ?, ?)
                            ON CONFLICT (boot_id) DO UPDATE SET boot_time = excluded.boot_time,
                                true_time = excluded.true_time, source = excluded.source
                            """, arguments: [sample.boot.bootID, sample.boot.seconds,
                                             sample.trueTime.timeIntervalSince1970, sample.source])
                        return .commit
                    }
                }
            }
        }
    }
}
