import Foundation

public enum DiskSpace {
    /// Bytes available to an unprivileged writer on the file system holding `path`
    /// (the path itself or, when it does not exist yet, its nearest existing parent).
    public static func availableBytes(at path: String) -> Int64? {
        statistics(at: path).map { Int64($0.f_bavail) * Int64($0.f_frsize) }
    }

    /// Size in bytes of the file system holding `path` (same lookup as `availableBytes`).
    public static func totalBytes(at path: String) -> Int64? {
        statistics(at: path).map { Int64($0.f_blocks) * Int64($0.f_frsize) }
    }

    private static func statistics(at path: String) -> statvfs? {
        var probe = path
        while !FileManager.default.fileExists(atPath: probe) {
            let parent = (probe as NSString).deletingLastPathComponent
            if parent == probe || parent.isEmpty { return nil }
            probe = parent
        }
        var info = statvfs()
        guard statvfs(probe, &info) == 0 else { return nil }
        return info
    }
}
