import AgentCore
import Foundation

/// What a file source keeps in its anchor besides device, inode, offset and line.
struct FileAnchorExtra: Codable, Equatable {
    /// Hex of the file's first bytes (up to 128): tells a file truncated and rewritten in
    /// place (copytruncate) from the one the offset belongs to, and finds its copy.
    var fingerprint: String?
    /// The CSV header row in force at the offset.
    var parserState: String?
    /// An unfinished first import: lines before this offset older than the cutoff are skipped.
    var backfillEnd: Int64?
    var backfillCutoff: Double?

    var json: String? {
        guard let data = try? JSONEncoder().encode(self) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    init(fingerprint: [UInt8], parserState: String?, backfillEnd: Int64?, backfillCutoff: Double?) {
        self.fingerprint = fingerprint.isEmpty ? nil : fingerprint.lowercaseHex
        self.parserState = parserState
        self.backfillEnd = backfillEnd
        self.backfillCutoff = backfillCutoff
    }

    init?(json: String?) {
        guard let json, let decoded = try? JSONDecoder().decode(FileAnchorExtra.self, from: Data(json.utf8)) else { return nil }
        self = decoded
    }

    var fingerprintBytes: [UInt8] {
        guard let hex = fingerprint else { return [] }
        var bytes: [UInt8] = []
        var chars = hex.utf8.makeIterator()
        while let hi = chars.next(), let lo = chars.next() {
            guard let h = Self.nibble(hi), let l = Self.nibble(lo) else { return [] }
            bytes.append(h << 4 | l)
        }
        return bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: return c - 48
        case 97...102: return c - 87
        default: return nil
        }
    }
}
