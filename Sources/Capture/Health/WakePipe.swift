import Foundation

/// A pipe a source thread polls next to its input, so `requestStop()` can wake a thread
/// blocked in poll(2) without a time-out.
final class WakePipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    init() throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    func wake() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &buffer, buffer.count) > 0 {}
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }
}

enum Poll {
    /// Waits until one of `fds` is readable (or hung up) or `timeout` seconds pass (nil:
    /// no time-out). Returns the revents per descriptor.
    static func wait(_ fds: [Int32], timeout: TimeInterval?) -> [Int16] {
        var entries = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let ms: Int32 = timeout.map { Int32(max(0, min(Double(Int32.max), ($0 * 1000).rounded(.up)))) } ?? -1
        let result = poll(&entries, nfds_t(entries.count), ms)
        return result > 0 ? entries.map(\.revents) : entries.map { _ in 0 }
    }
}
