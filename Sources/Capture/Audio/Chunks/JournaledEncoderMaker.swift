import AgentCore
import Foundation

/// Makes the encoder of each chunk that begins (the chunker's `ChunkEncoderFactory`): the
/// chunk takes its place among the provisional times, and gets its journal, whose name
/// keeps that time. Its chunks share one adaptive-rate plan (`BitratePlanCarry`).
struct JournaledEncoderMaker {
    let settings: OggOpusChunkEncoder.Settings
    let times: ChunkTimes
    let journal: ChunkJournal
    let carry = BitratePlanCarry()

    func make(_ beginning: ChunkBeginning) throws -> OggOpusChunkEncoder {
        let provisional = times.began(beginning.id, start: beginning.start)
        return try OggOpusChunkEncoder(settings, journal: journal.begin(beginning, provisional: provisional), carry: carry)
    }
}
