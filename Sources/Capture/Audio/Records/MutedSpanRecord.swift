import AgentCore
import Foundation

/// The `microphone` record that tells a Virtues box the microphone was muted on purpose
/// from `start` to `end`: the box's own app's muted marker, on the silent path
/// (`is_silent: true`, no `audio_data`, no level) with `muted_by` naming the rule
/// (`schedule` or `place`, never the place). The box stores it as a recording without
/// audio, so its day shows a chosen silence rather than a dead collector; the older servers
/// are never sent one (docs/upload.md, "Muted spans").
public enum MutedSpanRecord {
    public static func make(from start: Date, to end: Date, mutedBy reason: MicrophoneGate.Reason) throws -> NewRecord {
        let duration = max(0, end.timeIntervalSince(start))
        return try NewRecord(stream: .microphone, capturedAt: start, fields: [
            "timestamp_start": RFC3339.string(from: start),
            "timestamp_end": RFC3339.string(from: end),
            "duration_seconds": duration,
            "audio_format": "ogg",
            "is_silent": true,
            mutedByField: reason.rawValue,
        ])
    }

    /// The record's field for the rule that muted the span.
    public static let mutedByField = "muted_by"
}
