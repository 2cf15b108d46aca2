import Foundation

/// A TCP socket bound to 127.0.0.1 on a port the kernel picked, closed with this object:
/// the one way the rigs and tests get a loopback port (`FreePort`, a listener that never
/// accepts, a full accept queue).
public final class LoopbackSocket {
    public let descriptor: Int32
    public let port: Int

    /// Bound, and listening with `backlog` when one is given. Throws the call's errno.
    public init(listening backlog: Int32? = nil) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
        var address = Self.address(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound, backlog.map({ listen(descriptor, $0) == 0 }) ?? true else {
            let code = POSIXErrorCode(rawValue: errno) ?? .EADDRINUSE
            close(descriptor)
            throw POSIXError(code)
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }

    /// Its address, to connect to.
    public var address: sockaddr_in { Self.address(port: port) }

    private static func address(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
