import Foundation

/// A poll(2) that another thread can interrupt: a capture thread sleeps in it (on the
/// gpsd socket, inotify, a serial port, or for a backoff delay) and `wake()` ends the
/// sleep for good. Once woken it stays woken, so it doubles as the thread's stop flag and
/// a stop can never be missed between two waits. Threads that poll several descriptors
/// themselves put `fd` among them.
public final class Waker: Sendable {
    public enum Outcome: Equatable, Sendable {
        case readable
        case timedOut
        case woken
    }

    private let readEnd: Int32
    private let writeEnd: Int32

    public init() throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE)
        }
        readEnd = fds[0]
        writeEnd = fds[1]
        _ = fcntl(writeEnd, F_SETFL, fcntl(writeEnd, F_GETFL) | O_NONBLOCK)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    public func wake() {
        var byte: UInt8 = 1
        // A full pipe already means "woken"; nothing to do when the write fails.
        _ = write(writeEnd, &byte, 1)
    }

    /// Readable once woken; for threads that call poll(2) with descriptors of their own.
    public var fd: Int32 { readEnd }

    public var isWoken: Bool {
        wait(for: nil, timeout: 0) == .woken
    }

    /// Sleeps until `fd` is readable (or hung up), `timeout` seconds pass (nil: no limit),
    /// or `wake()` is called.
    public func wait(for fd: Int32?, timeout: TimeInterval?) -> Outcome {
        // poll itself failing leaves nothing sensible to wait on; report the fd as
        // readable so the caller reads and meets the real error there.
        guard let revents = Poll.wait(fd.map { [readEnd, $0] } ?? [readEnd], timeout: timeout) else { return .readable }
        if revents[0] != 0 { return .woken }
        return revents.dropFirst().contains { $0 != 0 } ? .readable : .timedOut
    }

    /// Sleeps until the peer closes the stream socket `fd` (or it fails), `timeout` seconds
    /// pass, or `wake()` is called; data arriving on `fd` does not end the sleep (it waits
    /// in the socket's buffer). `.readable` means closed or failed: a read says which.
    public func wait(forCloseOf fd: Int32, timeout: TimeInterval?) -> Outcome {
        guard let revents = Poll.wait([(fd: readEnd, events: Int16(POLLIN)), (fd: fd, events: Poll.peerClosed)],
                                      timeout: timeout) else { return .readable }
        if revents[0] != 0 { return .woken }
        return revents[1] != 0 ? .readable : .timedOut
    }
}
