import Foundation

/// poll(2) as every thread of the agent calls it. A signal that lands on the thread
/// (EINTR) does not end the wait: it goes on for what is left of the time-out, measured
/// on the monotonic clock.
public enum Poll {
    /// Waits until one of `fds` is readable (or hung up) or `timeout` seconds pass (nil: no
    /// time-out). Returns the revents of each descriptor, all 0 when the time ran out; nil
    /// when poll itself failed (for a reason other than a signal).
    public static func wait(_ fds: [Int32], timeout: TimeInterval?) -> [Int16]? {
        wait(fds.map { (fd: $0, events: Int16(POLLIN)) }, timeout: timeout)
    }

    /// POLLRDHUP (Linux, `_GNU_SOURCE` in poll.h, so not imported): the peer closed its end
    /// of a stream socket. Waiting for it alone watches a connection without waking for
    /// the data that arrives on it.
    public static let peerClosed: Int16 = 0x2000

    /// As `wait(_:timeout:)`, with the events to wait for given per descriptor (POLLERR and
    /// POLLHUP are always reported).
    public static func wait(_ fds: [(fd: Int32, events: Int16)], timeout: TimeInterval?) -> [Int16]? {
        var entries = fds.map { pollfd(fd: $0.fd, events: $0.events, revents: 0) }
        let deadline = timeout.map { Monotonic.now + max(0, $0) }
        while true {
            let milliseconds: Int32
            if let deadline {
                let remaining = max(0, deadline - Monotonic.now) * 1000
                milliseconds = Int32(min(remaining, Double(Int32.max)).rounded(.up))
            } else {
                milliseconds = -1
            }
            let ready = poll(&entries, nfds_t(entries.count), milliseconds)
            if ready >= 0 { return entries.map(\.revents) }
            if errno != EINTR { return nil }
        }
    }
}
