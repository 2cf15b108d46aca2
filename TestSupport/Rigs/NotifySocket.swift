import Foundation

/// A datagram socket standing in for systemd's NOTIFY_SOCKET: collects what is sent.
public final class NotifySocket: @unchecked Sendable {
    // @unchecked: `fd` is set once; reads happen on the caller's thread only.
    public let path: String
    private let fd: Int32

    public init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let ok = withUnsafePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
        }
        guard fd >= 0, ok else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Every datagram that has arrived so far.
    public func drain() -> [String] {
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            messages.append(String(decoding: buffer[0..<n], as: UTF8.self))
        }
        return messages
    }

    deinit {
        close(fd)
        unlink(path)
    }
}
