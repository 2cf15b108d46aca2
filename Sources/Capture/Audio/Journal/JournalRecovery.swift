import AgentCore
import Foundation
import Logging

/// Turns what the audio journal holds at a stream's start into chunks to enqueue: each
/// journal is closed into a playable file (`OggOpusRepair`) and timed from its header and
/// its last granule position. Journals that need nothing more are removed: no audio page,
/// nothing beyond the overlap (that audio is in the previous chunk, as when a run ends
/// inside an overlap), or the record is already in the queue (killed between the enqueue
/// and the unlink; a second enqueue would be a duplicate).
struct JournalRecovery {
    let journal: AudioJournal
    let queue: any RecordLookup
    let logger: Logger

    struct Recovered {
        var chunk: AudioChunk
        var bitrate: Int
        var wasCut: Bool
        /// The chunk's time was provisional when it began (the header's boot clock).
        var provisional: ProvisionalTime?
    }

    /// Oldest first. A journal whose fate cannot be decided (the queue cannot be read) is
    /// left for the next start rather than risk a duplicate.
    func run() -> [Recovered] {
        let (journals, strays) = journal.entries()
        for path in strays {
            logger.warning("audio journal: removing a file that is no chunk's journal (a version 1 page file without its header: a crash or power cut while a chunk began)",
                           metadata: ["path": "\(path)"])
            unlink(path)
        }
        var recovered: [Recovered] = []
        for (header, pagesPath) in journals {
            let id = header.recordID
            do {
                if try queue.containsRecord(id: id) {
                    logger.info("audio journal: chunk already in the queue; journal removed", metadata: ["id": "\(id)"])
                    journal.remove(id)
                    continue
                }
            } catch {
                logger.error("audio journal: cannot ask the queue whether a chunk is in it; keeping its journal for the next start",
                             metadata: ["id": "\(id)", "error": "\(error)"])
                continue
            }
            guard let bytes = FileManager.default.contents(atPath: pagesPath),
                  let repaired = OggOpusRepair.repair(bytes) else {
                logger.info("audio journal: no audio page in the journal; removed", metadata: ["id": "\(id)"])
                journal.remove(id)
                continue
            }
            let frames = Int(repaired.samples48k * Int64(header.sampleRate) / 48_000)
            guard frames > header.overlapFrames else {
                logger.info("audio journal: chunk holds only its overlap (in the previous chunk); removed",
                            metadata: ["id": "\(id)"])
                journal.remove(id)
                continue
            }
            let chunk = AudioChunk(id: id, start: Date(timeIntervalSince1970: header.start), frames: frames,
                                   overlapFrames: header.overlapFrames, sampleRate: header.sampleRate,
                                   data: repaired.data)
            recovered.append(Recovered(chunk: chunk, bitrate: header.bitrate, wasCut: repaired.wasCut, provisional: header.provisional))
        }
        return recovered
    }
}
