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
