import CThread
import Foundation

/// A wake-up another thread can ring any number of times: an eventfd the owner puts
/// among the descriptors it polls and clears once it has taken what was handed to it.
/// Unlike `Waker`, which stays woken for good (a stop flag), a doorbell is reset by
/// `clear()`: a thread that is handed work from a bus thread sleeps on it.
public final class Doorbell: Sendable {
    public let fd: Int32

    public init() throws {
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
        self.fd = fd
    }

    deinit { close(fd) }

    public func ring() {
        var one: UInt64 = 1
        // A counter at its maximum is still rung: nothing to do when the write fails.
        _ = write(fd, &one, 8)
    }

    /// Takes the rings so far; the next poll sleeps until the next one.
    public func clear() {
        var count: UInt64 = 0
        _ = read(fd, &count, 8)
    }
}
