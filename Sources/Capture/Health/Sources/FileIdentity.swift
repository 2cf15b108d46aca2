import Foundation

/// A file as the kernel knows it: device and inode survive a rename, so they tell a
/// rotated file from the new one at the same path.
struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64
    var size: Int64

    func sameFile(as other: FileIdentity) -> Bool { device == other.device && inode == other.inode }

    static func of(path: String) -> FileIdentity? {
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        return FileIdentity(st)
    }

    static func of(fd: Int32) -> FileIdentity? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return FileIdentity(st)
    }

    private init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
    }

    /// The first `count` bytes of an open file (fewer when it is shorter).
    static func prefix(fd: Int32, count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, 0) }
        return n > 0 ? Array(bytes.prefix(n)) : []
    }

    /// Rotated siblings of `path` (`hr.jsonl.1`, `hr.jsonl-20261122`): the files in its
    /// directory whose name starts with its name. Where a rotated file is looked for.
    static func siblings(of path: String) -> [String] {
        let directory = (path as NSString).deletingLastPathComponent
        let base = (path as NSString).lastPathComponent
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)) ?? []
        return entries.filter { $0 != base && $0.hasPrefix(base) }.sorted()
            .map { (directory as NSString).appendingPathComponent($0) }
    }
}

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
        self.fingerprint = fingerprint.isEmpty ? nil : fingerprint.map { String(format: "%02x", $0) }.joined()
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
