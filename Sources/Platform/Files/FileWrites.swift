import Foundation

/// The POSIX steps every durable file of the agent needs (the audio journal, the
/// queue's attachment files, the configuration), written once.
public enum FileWrites {
    /// A file's owner, set with fchown.
    public struct Owner: Sendable, Equatable {
        public var user: uid_t
        public var group: gid_t
        public init(user: uid_t, group: gid_t) {
            self.user = user
            self.group = group
        }
    }

    /// Replaces the file at `path` with `bytes` so that a reader sees the old file or the
    /// new one, never part of either: a temporary file in the same directory (a dot file
    /// ending in `.tmp`, so collectors that match `*.prom` or `*.toml` skip it) is written,
    /// given `mode` and `owner`, and renamed over `path`. `durable`: the file is fsynced
    /// before the rename and the directory after, so the new file survives a power cut.
    /// On failure the old file is left as it was and the temporary file is removed; a
    /// failed directory sync is thrown too, though the new file is then already in place.
    public static func replace(_ path: String, with bytes: Data, mode: mode_t, owner: Owner? = nil, durable: Bool) throws {
        let name = (path as NSString).lastPathComponent
        let parent = (path as NSString).deletingLastPathComponent
        let directory = parent.isEmpty ? "." : parent
        let temporary = "\(directory)/.\(name).\(getpid()).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw FileWriteError(.create, path: temporary, code: errno) }
        var failure: FileWriteError?
        if let code = writeAll(bytes, to: descriptor) {
            failure = FileWriteError(.write, path: temporary, code: code)
        } else if fchmod(descriptor, mode) != 0 {
            // open's mode passes through the umask; the mode asked for is the one wanted.
            failure = FileWriteError(.chmod, path: temporary, code: errno)
        } else if let owner, fchown(descriptor, owner.user, owner.group) != 0 {
            failure = FileWriteError(.chown, path: temporary, code: errno)
        } else if durable && fsync(descriptor) != 0 {
            failure = FileWriteError(.sync, path: temporary, code: errno)
        }
        // Some file systems (NFS) report a failed write only at close.
        if close(descriptor) != 0 && failure == nil {
            failure = FileWriteError(.write, path: temporary, code: errno)
        }
        if failure == nil && rename(temporary, path) != 0 {
            failure = FileWriteError(.rename, path: path, code: errno)
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
        if durable, !syncDirectory(directory) {
            throw FileWriteError(.syncDirectory, path: directory, code: errno)
        }
    }

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
    /// across a power cut; false (errno set) when it cannot be opened or synced.
    @discardableResult
    public static func syncDirectory(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        let synced = fsync(descriptor) == 0
        let code = errno
        close(descriptor)
        errno = code
        return synced
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

/// A step of `FileWrites.replace` that failed, with the file and the errno.
public struct FileWriteError: Error, CustomStringConvertible, Equatable {
    public enum Step: String, Sendable {
        case create, write, chmod, chown, sync, rename
        case syncDirectory = "sync the directory"
    }

    public let step: Step
    public let path: String
    public let code: Int32

    init(_ step: Step, path: String, code: Int32) {
        self.step = step
        self.path = path
        self.code = code
    }

    /// The disk (or the user's quota) is full.
    public var isDiskFull: Bool { code == ENOSPC || code == EDQUOT }

    /// strerror's text for `code`.
    public var reason: String { String(cString: strerror(code)) }

    public var description: String { "\(step.rawValue) \(path): \(reason)" }
}
