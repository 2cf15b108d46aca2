import Foundation

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
