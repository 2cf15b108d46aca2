import Foundation

/// What the block device under a directory has written: sectors from
/// `/sys/dev/block/MAJ:MIN/stat`, so the file system's own writes (its journal commits,
/// metadata written back, the flusher's writes) count as well as the process's. Everything
/// else writing to that device counts too: measure on a file system of its own (a loop
/// mount) for a clean figure.
struct BlockDeviceWrites {
    let name: String
    private let statPath: String

    /// nil when no block device is under `directory` (tmpfs, overlay without one).
    init?(directory: String) {
        var info = stat()
        guard stat(directory, &info) == 0 else { return nil }
        let device = UInt64(info.st_dev)
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff))
        let minor = (device & 0xff) | ((device >> 12) & ~UInt64(0xff))
        let link = "/sys/dev/block/\(major):\(minor)"
        guard major != 0, FileManager.default.fileExists(atPath: link + "/stat"),
              let target = try? FileManager.default.destinationOfSymbolicLink(atPath: link) else { return nil }
        name = (target as NSString).lastPathComponent
        statPath = link + "/stat"
    }

    /// Writes everything dirty to the devices first (sync: Glibc's module has no syncfs),
    /// so a window's figure holds what was written in it and nothing before.
    func bytesWritten() -> Int? {
        sync()
        guard let text = try? String(contentsOfFile: statPath, encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ", omittingEmptySubsequences: true)
        // Field 7: sectors written, in 512-byte units whatever the device's sector size.
        guard fields.count > 6, let sectors = Int(fields[6]) else { return nil }
        return sectors * 512
    }
}
