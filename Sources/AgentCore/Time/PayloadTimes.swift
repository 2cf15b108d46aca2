import Foundation

/// The capture times inside a stored payload: `timestamp` (health, location) or
/// `timestamp_start` and `timestamp_end` (microphone). A correction shifts them in place,
/// byte for byte, so the rest of the payload (80 KB of base64 audio) is never re-encoded.
public enum PayloadTimes {
    public static let fields = ["timestamp", "timestamp_start", "timestamp_end"]

    /// The payload with every capture time moved by `milliseconds`; nil when the payload
    /// is not a JSON object, holds none of the fields, or a field is not in the agent's own
    /// form (`2026-11-22T10:05:00.000Z`) exactly once.
    public static func shifted(_ payload: Data, by milliseconds: Int64) -> Data? {
        guard let object = try? JSONSerialization.jsonObject(with: payload) as? [String: Any] else { return nil }
        var result = payload
        var rewritten = 0
        for field in fields {
            guard let value = object[field] else { continue }
            guard let text = value as? String, let old = RFC3339.milliseconds(from: text) else { return nil }
            let new = RFC3339.string(milliseconds: old + milliseconds)
            let needle = Data("\"\(field)\":\"\(text)\"".utf8)
            // The key and value were written by the agent without spaces; quotes inside
            // other strings are escaped, so the pair occurs once or the payload is not ours.
            guard let found = result.range(of: needle),
                  result.range(of: needle, in: found.upperBound..<result.endIndex) == nil else { return nil }
            result.replaceSubrange(found, with: Data("\"\(field)\":\"\(new)\"".utf8))
            rewritten += 1
        }
        return rewritten > 0 ? result : nil
    }
}
