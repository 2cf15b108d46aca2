#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// The listening Unix socket the daemon's curl connects to.
enum UnixListener {
    /// Binds and listens on `path`, mode 0600, after removing a stale file there.
    /// Returns the non-blocking listening descriptor.
    static func listen(path: String) throws(BridgeFailure) -> Int32 {
        var st = stat()
        if lstat(path, &st) == 0 && (st.st_mode & S_IFMT) != S_IFDIR {
            unlink(path)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw BridgeFailure(.bindFailed, "socket(AF_UNIX): \(errnoText())") }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            let bytes = Array(path.utf8)
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        // Created 0600 (umask 0177 while binding), whatever the daemon's umask.
        let oldMask = umask(0o177)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        let bindErrno = errno
        umask(oldMask)
        guard bound == 0 else {
            close(fd)
            throw BridgeFailure(.bindFailed, "cannot bind the Unix socket \(path): \(String(cString: strerror(bindErrno)))")
        }
        chmod(path, 0o600)
        guard Glibc.listen(fd, 16) == 0 else {
            let text = errnoText()
            close(fd)
            throw BridgeFailure(.bindFailed, "cannot listen on \(path): \(text)")
        }
        return fd
    }

    /// Accepts connections as they come, on `queue`, handing each (non-blocking) to `handle`.
    static func acceptLoop(fd: Int32, queue: DispatchQueue, handle: @escaping @Sendable (Int32) -> Void) -> DispatchSourceRead {
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler {
            while true {
                let client = accept(fd, nil, nil)
                if client >= 0 {
                    // (accept4 is a GNU extension Swift's Glibc module leaves out.)
                    _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                    _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
                    handle(client)
                    continue
                }
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno != EAGAIN && errno != EWOULDBLOCK {
                    Output.diagnostic("accept: \(errnoText())")
                }
                return
            }
        }
        source.resume()
        return source
    }
}

/// One accepted connection of the daemon, non-blocking, read and written from async code.
/// Every system call on the descriptor happens on the connection's serial queue, and the
/// descriptor is closed there only once no dispatch source watches it any longer.
final class ClientSocket: @unchecked Sendable {
    private let fd: Int32
    private let queue = DispatchQueue(label: "ariata-iroh-bridge.client")

    // Only touched on `queue`.
    private var closed = false
    private var liveSources = 0
    private var waiting: [ObjectIdentifier: (source: DispatchSourceProtocol, fail: () -> Void)] = [:]

    init(fd: Int32) { self.fd = fd }

    /// Up to `max` bytes as they arrive; nil at the end of the client's data, on an error,
    /// or once the connection is closed.
    func read(max: Int) async -> [UInt8]? {
        await withCheckedContinuation { (continuation: CheckedContinuation<[UInt8]?, Never>) in
            queue.async { self.attemptRead(max: max, continuation) }
        }
    }

    /// Writes all of `bytes`; false if the client has gone (or the connection was closed).
    func write(_ bytes: [UInt8]) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            queue.async { self.attemptWrite(bytes, from: 0, continuation) }
        }
    }

    /// Whether the client has closed the connection altogether (not just ended its sending
    /// side with shutdown(2), after which it may still read).
    func peerHasClosed() async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            queue.async {
                if self.closed { continuation.resume(returning: true); return }
                var entry = pollfd(fd: self.fd, events: Int16(POLLIN), revents: 0)
                let hangUp = poll(&entry, 1, 0) == 1 && (entry.revents & Int16(POLLHUP)) != 0
                continuation.resume(returning: hangUp)
            }
        }
    }

    /// Closes the connection: pending reads and writes end (nil, false); the client sees the end.
    func close() {
        queue.async {
            guard !self.closed else { return }
            self.closed = true
            let pending = self.waiting
            self.waiting = [:]
            for (_, entry) in pending {
                entry.source.cancel()
                entry.fail()
            }
            if self.liveSources == 0 { Glibc.close(self.fd) }
        }
    }

    private func attemptRead(max: Int, _ continuation: CheckedContinuation<[UInt8]?, Never>) {
        if closed { continuation.resume(returning: nil); return }
        var buffer = [UInt8](repeating: 0, count: max)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, max) }
            if n > 0 {
                buffer.removeSubrange(n...)
                continuation.resume(returning: buffer)
                return
            }
            if n == 0 { continuation.resume(returning: nil); return }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                whenReady(forWriting: false,
                          retry: { self.attemptRead(max: max, continuation) },
                          fail: { continuation.resume(returning: nil) })
                return
            }
            continuation.resume(returning: nil)
            return
        }
    }

    private func attemptWrite(_ bytes: [UInt8], from start: Int, _ continuation: CheckedContinuation<Bool, Never>) {
        if closed { continuation.resume(returning: false); return }
        var offset = start
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n >= 0 { offset += n; continue }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                let resumeAt = offset
                whenReady(forWriting: true,
                          retry: { self.attemptWrite(bytes, from: resumeAt, continuation) },
                          fail: { continuation.resume(returning: false) })
                return
            }
            continuation.resume(returning: false)
            return
        }
        continuation.resume(returning: true)
    }

    /// Runs `retry` on the queue once the descriptor is readable (writable), or `fail` if
    /// the connection is closed first. A one-shot source, cancelled as soon as it fires.
    private func whenReady(forWriting: Bool, retry: @escaping () -> Void, fail: @escaping () -> Void) {
        let source: DispatchSourceProtocol = forWriting
            ? DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
            : DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        let key = ObjectIdentifier(source as AnyObject)
        liveSources += 1
        waiting[key] = (source, fail)
        source.setEventHandler {
            guard let entry = self.waiting.removeValue(forKey: key) else { return }
            entry.source.cancel()
            retry()
        }
        // The handler holds the source until dispatch has finished with it (dispatch drops
        // its handlers once cancelled, which breaks the cycle).
        source.setCancelHandler {
            withExtendedLifetime(source) {}
            self.liveSources -= 1
            if self.closed && self.liveSources == 0 { Glibc.close(self.fd) }
        }
        source.resume()
    }
}

func errnoText() -> String { String(cString: strerror(errno)) }
