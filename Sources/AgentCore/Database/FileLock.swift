import Foundation

/// An exclusive flock(2) on a file beside the database. The kernel drops the lock when
/// its holder exits, however it exits, so a crash never leaves a stale lock.
public final class FileLock: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// Only one upload at a time, whether the daemon's timer or `ariata-agent sync` runs it.
    public static func upload(databasePath: String) -> FileLock {
        FileLock(path: databasePath + ".upload-lock")
    }

    /// One daemon per database, held for the daemon's life; `status` probes it.
    public static func daemon(databasePath: String) -> FileLock {
        FileLock(path: databasePath + ".daemon-lock")
    }

    /// A held lock; released by `release()` or when dropped.
    public final class Acquired: @unchecked Sendable {
        // @unchecked: the descriptor is written once at creation and closed once.
        private var fd: Int32
        init(fd: Int32) { self.fd = fd }
        public func release() {
            guard fd >= 0 else { return }
            flock(fd, LOCK_UN)
            close(fd)
            fd = -1
        }
        deinit { release() }
    }

    /// Takes the lock without waiting; nil when another process or thread holds it.
    public func tryAcquire() throws -> Acquired? {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            close(fd)
            return nil
        }
        return Acquired(fd: fd)
    }

    /// True when someone holds the lock now (probes by trying to take it).
    public func isLocked() -> Bool {
        guard let held = try? tryAcquire() else { return true }
        held.release()
        return false
    }

    /// Waits up to `timeout` seconds for the lock.
    public func acquire(timeout: TimeInterval) throws -> Acquired? {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if let held = try tryAcquire() { return held }
            Thread.sleep(forTimeInterval: 0.2)
        } while Date() < deadline
        return nil
    }
}
