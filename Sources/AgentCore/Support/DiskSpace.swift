import Foundation

public enum DiskSpace {
    /// Bytes available to an unprivileged writer on the file system holding `path`
    /// (the path itself or, when it does not exist yet, its nearest existing parent).
    public static func availableBytes(at path: String) -> Int64? {
        var probe = path
        while !FileManager.default.fileExists(atPath: probe) {
            let parent = (probe as NSString).deletingLastPathComponent
            if parent == probe || parent.isEmpty { return nil }
            probe = parent
        }
        var info = statvfs()
        guard statvfs(probe, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }
}
