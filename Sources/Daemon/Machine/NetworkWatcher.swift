import CNetlink
import Foundation
import Logging
import Platform
import Synchronization

/// Tells when the network comes back, without polling: a netlink route socket
/// (rtnetlink(7)) on which the kernel announces every route and address change. A new
/// default route (IPv4 or IPv6) or a new address is "the network may be back"; the
/// uploader then forgets the backoff an outage caused and sends at once, instead of
/// waiting out a step of up to five minutes after the Wi-Fi returned.
///
/// Its thread (`ariata-netwatch` in `top -H`) sleeps in poll(2) and wakes only for such
/// announcements (a few per network change) and for `stop()`.
public final class NetworkWatcher: Sendable {
    private let onReturn: @Sendable (String) -> Void
    private let logger: Logger
    private let running = Mutex<NamedThread?>(nil)

    /// - Parameter onReturn: called on the watcher's thread with what happened, at most
    ///   once per burst of announcements (a network coming up sends several at once).
    public init(logger: Logger, onReturn: @escaping @Sendable (String) -> Void) {
        self.logger = logger
        self.onReturn = onReturn
    }

    /// Opens the socket and starts the thread. A system without netlink (a container that
    /// forbids it) is logged and the agent goes on with its timer alone.
    public func start() {
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), NETLINK_ROUTE)
        guard fd >= 0 else {
            logger.notice("cannot watch the network (netlink: \(String(cString: strerror(errno)))): uploads after an outage wait for their backoff")
            return
        }
        var address = sockaddr_nl()
        address.nl_family = sa_family_t(AF_NETLINK)
        address.nl_groups = UInt32(RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
            }
        }
        guard bound == 0 else {
            logger.notice("cannot watch the network (netlink bind: \(String(cString: strerror(errno)))): uploads after an outage wait for their backoff")
            close(fd)
            return
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        do {
            let thread = try NamedThread(name: "ariata-netwatch") { [self] waker in
                watch(fd, waker: waker)
                close(fd)
            }
            running.withLock { $0 = thread }
        } catch {
            logger.notice("cannot watch the network (no thread: \(error)): uploads after an outage wait for their backoff")
            close(fd)
        }
    }

    /// Ends the thread and waits for it.
    public func stop() {
        running.withLock { $0.take() }?.stop()
    }

    private func watch(_ fd: Int32, waker: Waker) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            guard waker.wait(for: fd, timeout: nil) == .readable else { return }
            var news = Self.read(fd, into: &buffer)
            guard !news.isEmpty else { continue }
            // A link coming up announces its address and routes within a moment of each
            // other: gather them, then tell once.
            while waker.wait(for: fd, timeout: 0.3) == .readable {
                news += Self.read(fd, into: &buffer)
            }
            if waker.isWoken { return }
            let what = news.contains(.defaultRoute) ? "a default route appeared" : "a network address was added"
            logger.debug("network change: \(what)")
            onReturn(what)
        }
    }

    enum Change: Equatable { case defaultRoute, address }

    /// Reads what is waiting on the socket and keeps the announcements that matter.
    static func read(_ fd: Int32, into buffer: inout [UInt8]) -> [Change] {
        var changes: [Change] = []
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return changes }
            changes += parse(buffer[0 ..< count])
        }
    }

    /// The netlink messages in one datagram: RTM_NEWROUTE for a default route (no
    /// destination prefix) of the main table, and RTM_NEWADDR.
    static func parse(_ bytes: ArraySlice<UInt8>) -> [Change] {
        var changes: [Change] = []
        var offset = bytes.startIndex
        let header = MemoryLayout<nlmsghdr>.size
        while bytes.endIndex - offset >= header {
            let message = bytes[offset...].withUnsafeBytes { $0.loadUnaligned(as: nlmsghdr.self) }
            let length = Int(message.nlmsg_len)
            guard length >= header, offset + length <= bytes.endIndex else { break }
            switch Int32(message.nlmsg_type) {
            case Int32(RTM_NEWROUTE) where length >= header + MemoryLayout<rtmsg>.size:
                let route = bytes[(offset + header)...].withUnsafeBytes { $0.loadUnaligned(as: rtmsg.self) }
                if route.rtm_dst_len == 0, route.rtm_table == UInt8(RT_TABLE_MAIN.rawValue) { changes.append(.defaultRoute) }
            case Int32(RTM_NEWADDR):
                changes.append(.address)
            default:
                break
            }
            // Messages are aligned to 4 bytes (NLMSG_ALIGN).
            offset += (length + 3) & ~3
        }
        return changes
    }
}
