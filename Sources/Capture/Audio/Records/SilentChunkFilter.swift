import Foundation

/// `[microphone] upload_silent = false`: which finished chunks are dropped as silent, and
/// the episodes (runs of dropped chunks) the log tells once each. Capture thread only.
/// docs/streams/microphone.md, "Loudness and silence".
struct SilentChunkFilter {
    let thresholdDB: Int
    let dropsSilent: Bool
    /// Whether the chunk before the next one was dropped.
    private var previousDropped = false

    enum Verdict: Equatable {
        /// Keep the chunk, as given back: one that follows a dropped chunk says it
        /// overlaps nothing (`overlap_duration` 0), since its first seconds are in no
        /// stored chunk.
        case keep(AudioChunk)
        /// Drop it; `firstOfEpisode` when the chunk before was kept (the one to log).
        case drop(firstOfEpisode: Bool)
    }

    init(thresholdDB: Int, dropsSilent: Bool) {
        self.thresholdDB = thresholdDB
        self.dropsSilent = dropsSilent
    }

    /// A chunk without a level (its loudness unknown) is kept.
    mutating func pass(_ chunk: AudioChunk) -> Verdict {
        if dropsSilent, let level = chunk.level, level.isSilent(thresholdDB: thresholdDB) {
            defer { previousDropped = true }
            return .drop(firstOfEpisode: !previousDropped)
        }
        var kept = chunk
        if previousDropped { kept.overlapFrames = 0 }
        previousDropped = false
        return .keep(kept)
    }
}
