import Foundation

/// Makes sure only one upload runs at a time, whether the daemon's timer or
/// `ariata-agent sync` started it: an exclusive flock(2) on `<database>.upload-lock`.
/// The kernel drops the lock when its holder exits, however it exits.
public final class UploadLock: Sendable {
    public let path: String

    public init(databasePath: String) {
        path = databasePath + ".upload-lock"
    }

    /// A held lock; released by `release()` or when dropped.
    public final class Held: @unchecked Sendable {
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
    public func tryAcquire() throws -> Held? {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            close(fd)
            return nil
        }
        return Held(fd: fd)
    }

    /// Waits up to `timeout` seconds for the lock.
    public func acquire(timeout: TimeInterval) throws -> Held? {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if let held = try tryAcquire() { return held }
            Thread.sleep(forTimeInterval: 0.2)
        } while Date() < deadline
        return nil
    }
}
