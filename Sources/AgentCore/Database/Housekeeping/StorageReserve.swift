import Foundation
import Platform

/// A file of a few MiB beside the database that holds disk space for the storage guard.
/// When the disk is full, whoever filled it, SQLite cannot even delete (a deletion is
/// written to the WAL first, and a checkpoint may grow the database file); releasing
/// this file gives those writes room, and it is made again once there is space.
public struct StorageReserve: Sendable {
    public let path: String
    public let size: Int64

    public init(databasePath: String, size: Int64) {
        path = databasePath + ".reserve"
        self.size = size
    }

    /// Bytes the file really holds on disk (blocks, not its length: a sparse file holds nothing).
    public var reservedBytes: Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return min(Int64(info.st_size), Int64(info.st_blocks) * 512)
    }

    public var isInPlace: Bool { reservedBytes >= size }

    /// Deletes the file; returns the bytes it held.
    @discardableResult
    public func release() -> Int64 {
        let held = reservedBytes
        unlink(path)
        return held
    }

    /// Makes the file with its blocks allocated (posix_fallocate: on tmpfs and ext4 the
    /// space is taken at once, without writing it). Returns false, leaving no partial
    /// file behind, when the space is not there.
    @discardableResult
    public func make() -> Bool {
        if isInPlace { return true }
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        let result = posix_fallocate(fd, 0, off_t(size))
        let synced = result == 0 && fsync(fd) == 0
        close(fd)
        if !synced { unlink(path) }
        return synced
    }

    /// Below this much free disk the database may not open at all (its -shm and -wal
    /// files are made on open, and the first write needs WAL frames).
    public static let fullDiskBytes: Int64 = 1_048_576

    /// Deletes the reserve beside `databasePath` when the disk under it is full, so that
    /// the database can be opened (a daemon restarted after the disk filled). Returns
    /// whether it did.
    @discardableResult
    public static func releaseIfDiskFull(databasePath: String) -> Bool {
        let reserve = StorageReserve(databasePath: databasePath, size: 0)
        guard reserve.reservedBytes > 0, let free = DiskSpace.availableBytes(at: databasePath), free < fullDiskBytes else {
            return false
        }
        reserve.release()
        return true
    }
}
