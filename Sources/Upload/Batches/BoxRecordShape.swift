import AgentCore
import Foundation

/// A microphone record as a Virtues box's own app sends it: a chunk that app would call
/// silent (mean below -60 dBFS **and** peak below -50 dBFS) goes without `audio_data` and
/// with `is_silent: true`, so the box keeps no audio of it and writes a "silence"
/// transcript without calling its paid model (the contract's section "The Virtues box";
/// docs/streams/microphone.md, "On a Virtues box"). Every other record is sent as stored.
public enum BoxRecordShape {
    /// The box app's rule.
    public static let silentMeanBelow = -60.0
    public static let silentPeakBelow = -50.0

    private static let audioMarker = Array(#""audio_data":""#.utf8)

    /// The payload to send for `record`.
    public static func payload(of record: QueuedRecord, silentAudio: SilentAudio) -> Data {
        guard record.stream == .microphone, silentAudio == .omit,
              let head = headWithoutAudio(record.payload), isSilentForBox(head) else { return record.payload }
        var text = String(decoding: head, as: UTF8.self)
        if text.contains(#""is_silent":false"#) {
            text = text.replacingOccurrences(of: #""is_silent":false"#, with: #""is_silent":true"#)
        } else if !text.contains(#""is_silent":true"#) {
            text.removeLast()
            text += (text.hasSuffix("{") ? "" : ",") + #""is_silent":true}"#
        }
        return Data(text.utf8)
    }

    /// The record's JSON without its `audio_data`, which the queue appends as the last
    /// field; nil when it has none.
    static func headWithoutAudio(_ payload: Data) -> Data? {
        let bytes = [UInt8](payload)
        guard bytes.count > audioMarker.count else { return nil }
        var index = bytes.count - audioMarker.count
        while index > 0 {
            if bytes[index] == audioMarker[0], Array(bytes[index ..< index + audioMarker.count]) == audioMarker {
                let before = bytes[index - 1]
                let cut = before == UInt8(ascii: ",") ? index - 1 : index
                return Data(bytes[..<cut] + [UInt8(ascii: "}")])
            }
            index -= 1
        }
        return nil
    }

    /// Whether the levels the record carries make it silent by the box app's rule; a
    /// chunk without both levels (recovered after a crash, or captured by an older
    /// version) is not.
    static func isSilentForBox(_ head: Data) -> Bool {
        struct Levels: Decodable {
            var average_db_level: Double?
            var peak_db_level: Double?
        }
        guard let levels = try? JSONDecoder().decode(Levels.self, from: head),
              let mean = levels.average_db_level, let peak = levels.peak_db_level else { return false }
        return mean < silentMeanBelow && peak < silentPeakBelow
    }
}
