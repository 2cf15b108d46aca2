#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Iroh
import Synchronization

/// ariata-iroh-bridge: the daemon's way to a Virtues box, which speaks HTTP/1.1 over iroh
/// only. The daemon starts it for an upload cycle and sends its requests through a Unix
/// socket; each socket connection goes to the box as one bidirectional iroh stream.
/// A program of its own so that the daemon never loads the iroh library.
@main
struct Bridge {
    static let version = "0.1.0"
    static let irohVersion = "iroh-ffi 1.2.0 (iroh 1.4.1)"

    static func main() async {
        signal(SIGPIPE, SIG_IGN)
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.contains("--help") || arguments.contains("-h") {
            print(help, terminator: "")
            exit(0)
        }
        if arguments.contains("--version") {
            print("ariata-iroh-bridge \(version), \(irohVersion)")
            exit(0)
        }
        if let unknown = arguments.first {
            Output.diagnostic("unknown argument '\(unknown)' (the configuration comes on stdin; see --help)")
            exit(2)
        }
        Output.takeStdout()

        guard let line = readConfigLine() else {
            fail(BridgeFailure(.badConfig, "no configuration line on stdin"))
        }
        let config: BridgeConfig
        do {
            config = try BridgeConfig.parse(line)
        } catch {
            fail(BridgeFailure(.badConfig, error.message))
        }

        // From here on the end of stdin ends the bridge (the daemon closed it, or died).
        let stop = StopSignal()
        let stdinWatch = watchStdin(stop)
        let signalWatch = [SIGTERM, SIGINT].map { watchSignal($0, stop) }

        let link: Link
        let connection: Connection
        let listener: Int32
        do {
            link = try await Link.bind(config)
            connection = try await link.connectFirst()
            listener = try UnixListener.listen(path: config.socketPath)
        } catch {
            fail(error)
        }
        let acceptQueue = DispatchQueue(label: "ariata-iroh-bridge.accept")
        let acceptWatch = UnixListener.acceptLoop(fd: listener, queue: acceptQueue) { fd in
            Task { await Tunnel.serve(ClientSocket(fd: fd), link: link) }
        }
        stop.markRunning()
        Output.event([("event", .string("ready")), ("endpoint_id", .string(link.endpointId)),
                      ("path", .string(Link.pathKind(connection)))])

        let why = await stop.wait()
        acceptWatch.cancel()
        unlink(config.socketPath)
        await link.close(within: 2)
        if why != "stdin" { Output.diagnostic("stopped by \(why)") }
        withExtendedLifetime((stdinWatch, signalWatch)) {}
        exit(0)
    }

    /// Prints the error event and exits 1.
    static func fail(_ failure: BridgeFailure) -> Never {
        Output.error(failure.code, failure.message)
        Output.diagnostic("\(failure.code.rawValue): \(failure.message)")
        exit(1)
    }

    /// The first line of stdin, read byte by byte so that nothing after it is taken from
    /// the descriptor (the rest is only watched for its end). At most 64 KiB.
    static func readConfigLine() -> [UInt8]? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < 65536 {
            let n = read(0, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            if byte == UInt8(ascii: "\n") { return line }
            line.append(byte)
        }
        return line.isEmpty ? nil : line
    }

    /// Reads (and drops) what else comes on stdin until its end, then stops the bridge.
    static func watchStdin(_ stop: StopSignal) -> DispatchSourceRead {
        let source = DispatchSource.makeReadSource(fileDescriptor: 0, queue: DispatchQueue(label: "ariata-iroh-bridge.stdin"))
        source.setEventHandler {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, 4096) }
            if n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN)) { return }
            source.cancel()
            stop.request("stdin")
        }
        source.resume()
        return source
    }

    static func watchSignal(_ number: Int32, _ stop: StopSignal) -> DispatchSourceSignal {
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: DispatchQueue(label: "ariata-iroh-bridge.signal"))
        source.setEventHandler { stop.request(number == SIGTERM ? "SIGTERM" : "SIGINT") }
        source.resume()
        return source
    }
}

/// The request to stop (stdin's end or a signal). Before the bridge is set up there is
/// nothing to wind down and it exits at once; afterwards `wait()` returns.
final class StopSignal: Sendable {
    private struct State {
        var reason: String?
        var waiter: CheckedContinuation<String, Never>?
        var ready = false
    }
    private let state = Mutex(State())

    /// Marks the bridge as set up: from now on stopping goes through `wait()`.
    func markRunning() {
        state.withLock { $0.ready = true }
    }

    func request(_ reason: String) {
        let (waiter, early) = state.withLock { s -> (CheckedContinuation<String, Never>?, Bool) in
            if s.reason != nil { return (nil, false) }
            s.reason = reason
            defer { s.waiter = nil }
            return (s.waiter, !s.ready)
        }
        if let waiter {
            waiter.resume(returning: reason)
        } else if early {
            exit(0)
        }
    }

    func wait() async -> String {
        await withCheckedContinuation { continuation in
            let reason: String? = state.withLock { s in
                if let reason = s.reason { return reason }
                s.waiter = continuation
                return nil
            }
            if let reason { continuation.resume(returning: reason) }
        }
    }
}
