import Foundation

/// The files of a queue as the file system reports them, read apart from the queue's own
/// code so that a test of its sizes does not check that code against itself.
public enum DatabaseFiles {
    /// Bytes of the WAL beside the database at `path` (0 when there is none).
    public static func walBytes(_ path: String) -> Int64 {
        (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? NSNumber)?.int64Value ?? 0
    }
}
