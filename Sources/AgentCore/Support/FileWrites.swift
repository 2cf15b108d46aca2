import Foundation

/// The POSIX steps every durable file of the agent needs (the audio journal, the
/// queue's attachment files), written once.
public enum FileWrites {
    /// Writes all of `bytes` to `descriptor`, going on after short writes and EINTR.
    /// Returns the errno of a write that failed (ENOSPC: the disk is full), nil when done.
    public static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Int32? {
        guard let base = bytes.baseAddress else { return nil }
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, base + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            if written == 0 { return EIO }
            offset += written
        }
        return nil
    }

    public static func writeAll(_ data: Data, to descriptor: Int32) -> Int32? {
        data.withUnsafeBytes { writeAll($0, to: descriptor) }
    }

    /// fsyncs a directory, so that files made, renamed, linked or removed in it stay so
    /// across a power cut.
    public static func syncDirectory(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    /// fdatasyncs the file at `path` (written through another descriptor); false when it
    /// cannot be opened or synced.
    @discardableResult
    public static func syncFile(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return fdatasync(descriptor) == 0
    }
}
