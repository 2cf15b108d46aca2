import Foundation
import TestRigs

/// A real TCP server on 127.0.0.1 that plays a fault-injection script: the n-th accepted
/// connection gets the n-th list of steps. It stands where gpsd would, to feed the
/// client what gpsd never should.
final class ScriptedTCPServer: @unchecked Sendable {
    enum Step: Sendable {
        case send(Data)
        case sendLine(String)
        /// Close this connection (after reading what the client sent, so the close is a
        /// FIN, not a reset).
        case close
    }

    // `accepted` and `openConnections` are guarded by `lock`; the listener is set once.
    let port: Int
    private let listener: Int32
    private let scripts: [[Step]]
    private let lock = NSLock()
    private var accepted = 0
    private var openConnections: [Int32] = []
    private let finished = DispatchSemaphore(value: 0)

    init(scripts: [[Step]]) throws {
        self.scripts = scripts
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        guard listener >= 0 else { throw RigFailure("socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound, listen(listener, 8) == 0 else {
            close(listener)
            throw RigFailure("cannot listen on 127.0.0.1: \(String(cString: strerror(errno)))")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "scripted-tcp-server"
        thread.start()
    }

    var connectionsAccepted: Int { lock.withLock { accepted } }

    func stop() {
        // Unblocks accept() with EINVAL.
        shutdown(listener, Int32(SHUT_RDWR))
        _ = finished.wait(timeout: .now() + 5)
        close(listener)
        lock.withLock {
            openConnections.forEach { close($0) }
            openConnections.removeAll()
        }
    }

    private func acceptLoop() {
        defer { finished.signal() }
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            let index = lock.withLock { () -> Int in
                defer { accepted += 1 }
                return accepted
            }
            let steps = index < scripts.count ? scripts[index] : []
            if play(steps, on: connection) {
                lock.withLock { openConnections.append(connection) }
            }
        }
    }

    /// Returns true when the connection stays open.
    private func play(_ steps: [Step], on connection: Int32) -> Bool {
        for step in steps {
            switch step {
            case .send(let data):
                // MSG_NOSIGNAL: the client may already have hung up; no SIGPIPE for the tests.
                _ = data.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            case .sendLine(let line):
                let data = Data((line + "\n").utf8)
                _ = data.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            case .close:
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = recv(connection, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                close(connection)
                return false
            }
        }
        return true
    }
}
