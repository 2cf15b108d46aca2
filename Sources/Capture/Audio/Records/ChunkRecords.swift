import AgentCore
import Foundation
import Logging
import Platform

/// Chunk → record: whether a finished chunk is kept (`upload_silent`: `SilentChunkFilter`),
/// its `microphone` record (`MicrophoneRecord`: its journal file to link, its provisional
/// time), handed to the writer; and the records of the chunks recovered from the journal.
///
/// Capture thread only.
struct ChunkRecords {
    private let config: MicrophoneConfig
    private var silentChunks: SilentChunkFilter
    private let journal: ChunkJournal
    private let writer: ChunkWriter
    private let status: MicrophoneStatus
    private let logger: Logger

    init(config: MicrophoneConfig, journal: ChunkJournal, writer: ChunkWriter, status: MicrophoneStatus, logger: Logger) {
        self.config = config
        self.silentChunks = SilentChunkFilter(thresholdDB: config.silenceThresholdDB, dropsSilent: !config.uploadSilent)
        self.journal = journal
        self.writer = writer
        self.status = status
        self.logger = logger
    }

    /// Writes the records of the chunks just finished, or drops the silent ones.
    mutating func write(_ finished: [ChunkAssembly.Finished]) {
        for each in finished {
            let chunk: AudioChunk
            switch silentChunks.pass(each.chunk) {
            case .keep(let kept):
                chunk = kept
            case .drop(let firstOfEpisode):
                dropSilent(each.chunk, firstOfEpisode: firstOfEpisode)
                continue
            }
            do {
                var record = try MicrophoneRecord.make(chunk, bitrate: config.bitrate,
                                                       adaptive: .init(microphone: config),
                                                       silenceThresholdDB: config.silenceThresholdDB,
                                                       journalFile: journal.file(of: chunk.id))
                // Timed from a clock that cannot be believed (1970, or not yet NTP): the
                // queue holds it until the daemon corrects its time (ClockCorrection).
                record.provisional = each.provisional
                writer.write(record)
            } catch {
                logger.error("microphone chunk lost: cannot build its record", metadata: ["error": "\(error)"])
                journal.remove(chunk.id)
            }
        }
    }

    /// Before capture begins: what the journal kept goes to the queue first (through the
    /// writer, so a full disk keeps it waiting, journal and all).
    func writeRecovered(_ recovered: [JournalRecovery.Recovered]) {
        for each in recovered {
            let chunk = each.chunk
            logger.notice("microphone chunk recovered from the audio journal",
                          metadata: ["id": "\(chunk.id)", "timestamp_start": "\(RFC3339.string(from: chunk.start))",
                                     "duration": "\(chunk.duration)", "overlap": "\(chunk.overlapDuration)",
                                     "cut_off": "\(each.wasCut)"])
            do {
                var record = try MicrophoneRecord.make(chunk, bitrate: each.bitrate)
                // A chunk that began on a clock that could not be believed is held with the
                // boot clock its journal kept, and corrected like any other; one from a
                // journal without it (an older agent) and dated before 2000 is held from an
                // unknown boot (never sent with that time).
                if let provisional = each.provisional {
                    record.provisional = provisional
                } else if CaptureTimeRule.clockLooksUnset(chunk.start) {
                    record.provisional = ProvisionalTime(bootID: ProvisionalTime.unknownBoot, bootTime: 0)
                }
                writer.write(record)
            } catch {
                logger.error("microphone chunk from the journal: cannot build its record; journal kept",
                             metadata: ["id": "\(chunk.id)", "error": "\(error)"])
            }
        }
    }

    /// A silent chunk `upload_silent = false` drops: never stored, its journal removed,
    /// counted for `status`, and said in the log once per run of silent chunks.
    private func dropSilent(_ chunk: AudioChunk, firstOfEpisode: Bool) {
        journal.remove(chunk.id)
        let total = status.count(\.silentDropped)
        guard firstOfEpisode else { return }
        logger.notice("microphone: silent chunks are dropped until sound returns ([microphone] upload_silent = false); each is counted in 'ariata-agent status'",
                      metadata: ["average_db_level": "\(chunk.level?.reported ?? AudioLevel.floor)",
                                 "silence_threshold_db": "\(config.silenceThresholdDB)",
                                 "timestamp_start": "\(RFC3339.string(from: chunk.start))",
                                 "dropped_since_start": "\(total)"])
    }
}
