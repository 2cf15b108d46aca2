import Foundation

/// sd_notify(3) over the `NOTIFY_SOCKET` datagram socket: READY=1, STATUS=…, WATCHDOG=1,
/// RELOADING=1, STOPPING=1. No systemd library is needed for a few lines on a socket;
/// without `NOTIFY_SOCKET` (not started by systemd) every call does nothing.
public final class SystemdNotifier: Sendable {
    private let socketPath: String?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"] ?? ""
        socketPath = path.isEmpty ? nil : path
    }

    public var isActive: Bool { socketPath != nil }

    /// The watchdog interval systemd asks for (`WATCHDOG_USEC`), if any.
    public static func watchdogInterval(environment: [String: String] = ProcessInfo.processInfo.environment) -> TimeInterval? {
        guard let usec = environment["WATCHDOG_USEC"].flatMap(Double.init), usec > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"].flatMap(Int32.init), pid != getpid() { return nil }
        return usec / 1_000_000
    }

    public func ready(status: String) { send("READY=1\nSTATUS=\(status)") }
    public func status(_ text: String) { send("STATUS=\(text)") }
    public func watchdog() { send("WATCHDOG=1") }
    public func reloading() { send("RELOADING=1") }
    public func stopping() { send("STOPPING=1") }

    /// Sends one datagram; returns false when it could not be sent. A lost notification
    /// is not worth failing the daemon for.
    @discardableResult
    public func send(_ message: String) -> Bool {
        guard let socketPath else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }

        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        // A leading '@' names a socket in the abstract namespace: a NUL byte on the wire.
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count + (pathBytes.first == 0 ? 0 : 1))
        let payload = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                // Never wait: a notification that cannot go now is dropped, the daemon goes on.
                payload.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), sa, length) }
            }
        }
        return sent == payload.count
    }
}
