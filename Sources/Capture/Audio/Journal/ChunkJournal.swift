import AgentCore
import Foundation
import Logging

/// The journal's life as the microphone's parts see it: a chunk's journal begins with the
/// chunk, goes once its record is in the queue or the chunk is dropped, and what a crash
/// left is recovered at the next start. Without an audio journal every step does nothing
/// and chunks in progress live in memory only.
struct ChunkJournal: Sendable {
    let journal: AudioJournal?
    /// How to ask whether a recovered chunk is already in the queue.
    let queue: (any RecordLookup)?
    /// The configured rate for sound, in each journal's header.
    let bitrate: Int
    let logger: Logger

    /// The journal's durability (nil without a journal).
    var durability: JournalDurability? { journal?.durability }

    /// The journal of a chunk that begins; nil (the chunk is then in memory only) when there
    /// is no journal or it cannot be written, which must not stop capture.
    func begin(_ beginning: ChunkBeginning, provisional: ProvisionalTime?) -> JournalFile? {
        guard let journal else { return nil }
        do {
            return try journal.begin(beginning, bitrate: bitrate, provisional: provisional)
        } catch {
            logger.error("audio journal: cannot start the journal of a chunk; it is held in memory only until it is in the queue",
                         metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// The chunk's journal file, to be linked into the queue; nil when it has none.
    func file(of id: UUID) -> String? {
        journal?.oggPath(id)
    }

    /// The chunk's record is in the queue, or the chunk was dropped: its journal goes.
    func remove(_ id: UUID) {
        journal?.remove(id)
    }

    /// Before capture begins: what the last process or the last run of the stream left,
    /// as chunks to write, oldest first. Nothing when there is no journal, or when its
    /// directory cannot be made (the journal is then off, which is logged).
    func recover() -> [JournalRecovery.Recovered] {
        guard let journal, let queue else { return [] }
        do {
            try journal.prepare()
        } catch {
            logger.error("audio journal off: \(error)")
            return []
        }
        return JournalRecovery(journal: journal, queue: queue, logger: logger).run()
    }
}
