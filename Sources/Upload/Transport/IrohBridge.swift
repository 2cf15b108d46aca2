import AgentCore
import Foundation
import Platform

/// The bridge program (`ariata-iroh-bridge`) that carries this device's requests to a
/// Virtues box over iroh, started for one upload cycle (or one request outside it) and
/// stopped when it ends. The daemon never loads the iroh library itself: the bridge holds
/// it, its runtime and its sockets only while there is something to send
/// (docs/decisions/0009-iroh-bridge-process.md).
///
/// The bridge reads one JSON line on its standard input (the device's seed among it, so
/// it never appears in `ps`), binds its endpoint, connects to the box and answers one JSON
/// line: `{"event":"ready","endpoint_id":…,"path":"direct"|"relay"|…}` or
/// `{"event":"error","error":…,"message":…}`. Then each connection to its Unix socket is
/// one HTTP exchange on one new bidirectional stream. Closing its standard input stops it.
public final class IrohBridge: @unchecked Sendable {
    // @unchecked: one upload cycle owns it, on one thread.

    public static let programName = "ariata-iroh-bridge"
    /// Where the packages install it, beside its library.
    public static let installedProgram = "/usr/lib/ariata-agent/ariata-iroh-bridge"
    /// The one protocol the box's endpoint accepts.
    public static let alpn = "virtues/http/1"

    /// How this device reached the box: `direct`, `relay`, or what the bridge said.
    public let path: String
    public let socketPath: String
    private let child: PipedChild
    private let directory: String

    /// Starts the bridge and waits until it is connected to the box (at most the connect
    /// time-out and 5 s for the program's start).
    public init(box: BoxConfig, connectTimeout: Int) throws {
        guard let program = Self.program(configured: box.bridge) else {
            throw TransportFailure(kind: .other, detail: "the iroh bridge (\(Self.programName)) is not installed: reinstall the ariata-agent package, or set [box] bridge to its path")
        }
        let base = ProcessInfo.processInfo.environment["RUNTIME_DIRECTORY"].flatMap { $0.split(separator: ":").first.map(String.init) }
            ?? NSTemporaryDirectory()
        var template = Array(((base.hasSuffix("/") ? base : base + "/") + "ariata-iroh.XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TransportFailure(kind: .other, detail: "cannot make a directory for the iroh bridge's socket in \(base): \(String(cString: strerror(errno)))")
        }
        directory = String(cString: made)
        socketPath = directory + "/bridge.sock"
        do {
            child = try PipedChild(program: program)
        } catch {
            rmdir(directory)
            throw TransportFailure(kind: .other, detail: "cannot start the iroh bridge \(program): \(error)")
        }
        struct Start: Encodable {
            var secret_key: String
            var box_node_id: String
            var relay_url: String?
            var direct_addrs: [String]
            var socket: String
            var alpn: String
            var connect_timeout_seconds: Int
        }
        let start = Start(secret_key: box.key.value, box_node_id: box.nodeID, relay_url: box.relayURL,
                          direct_addrs: box.directAddresses, socket: socketPath, alpn: Self.alpn,
                          connect_timeout_seconds: connectTimeout)
        let line = (try? JSONEncoder().encode(start)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        var readyPath: String?
        var failure: TransportFailure?
        if !child.write(line + "\n") {
            failure = TransportFailure(kind: .other, detail: "the iroh bridge \(program) ended before it read its settings")
        } else if let answer = child.readLine(timeout: TimeInterval(connectTimeout) + 5) {
            switch Self.parse(answer) {
            case .ready(let path): readyPath = path
            case .failed(let kind, let message): failure = TransportFailure(kind: kind, detail: message)
            }
        } else {
            failure = TransportFailure(kind: .timedOut, detail: "the iroh bridge did not reach the box within \(connectTimeout + 5) s")
        }
        guard let readyPath else {
            child.finish(within: 1)
            unlink(socketPath)
            rmdir(directory)
            throw failure ?? TransportFailure(kind: .other, detail: "the iroh bridge did not start")
        }
        path = readyPath
    }

    deinit {
        stop()
    }

    /// Closes the bridge's input, its sign to close its endpoint and exit.
    public func stop() {
        child.finish(within: 2)
        unlink(socketPath)
        rmdir(directory)
    }

    enum Answer: Equatable {
        case ready(path: String)
        case failed(TransportFailure.Kind, String)
    }

    /// The bridge's first line.
    static func parse(_ line: String) -> Answer {
        struct Line: Decodable {
            var event: String?
            var path: String?
            var error: String?
            var message: String?
        }
        guard let said = try? JSONDecoder().decode(Line.self, from: Data(line.utf8)) else {
            return .failed(.other, "the iroh bridge said something that is not JSON: \(line.prefix(200))")
        }
        if said.event == "ready" { return .ready(path: said.path ?? "unknown") }
        let code = said.error ?? "unknown"
        return .failed(kind(ofBridgeError: code), said.message ?? code)
    }

    /// A bridge error code (its ready line, or its own 502's `X-Ariata-Iroh-Error`) as the
    /// transport's failure kind.
    static func kind(ofBridgeError code: String) -> TransportFailure.Kind {
        switch code {
        case "not_allowlisted": return .notAllowlisted
        case "unreachable": return .cannotConnect
        case "connection_lost", "connection_failed": return .connectionLost
        default: return .other
        }
    }

    /// The program to run: `[box] bridge`, else beside this program (a build tree, or
    /// `make install`), else where the packages put it.
    static func program(configured: String?) -> String? {
        if let configured { return access(configured, X_OK) == 0 ? configured : nil }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if n > 0 {
            let own = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let beside = (own as NSString).deletingLastPathComponent + "/" + programName
            if access(beside, X_OK) == 0 { return beside }
        }
        return access(installedProgram, X_OK) == 0 ? installedProgram : nil
    }
}

/// `HTTPTransport` to a Virtues box: libcurl sends each request to the iroh bridge's Unix
/// socket, one connection per request, and the bridge carries it to the box as one iroh
/// stream. The bridge runs as long as this transport (one upload cycle).
public final class BoxTransport: HTTPTransport {
    public let bridge: IrohBridge
    private let curl: CurlTransport

    public init(settings: ServerSettings, isCancelled: @escaping @Sendable () -> Bool = { false }) throws {
        guard let box = settings.box else {
            throw TransportFailure(kind: .other, detail: "no Virtues box is configured ([box])")
        }
        bridge = try IrohBridge(box: box, connectTimeout: settings.connectTimeout)
        var local = settings
        local.unixSocket = bridge.socketPath
        curl = try CurlTransport(settings: local, isCancelled: isCancelled)
    }

    public func send(_ request: HTTPRequest) -> Result<HTTPResponse, TransportFailure> {
        var request = request
        // One exchange per stream: the box reads to the end of the stream's request.
        request.headers.append(("Connection", "close"))
        let result = curl.send(request)
        // The bridge's own answer when the box could not be reached: a failure, never a status.
        if case .success(let response) = result, let code = response.headers["x-ariata-iroh-error"] {
            struct Said: Decodable { var message: String? }
            let message = (try? JSONDecoder().decode(Said.self, from: response.body))?.message
            return .failure(TransportFailure(kind: IrohBridge.kind(ofBridgeError: code), detail: message ?? code))
        }
        return result
    }
}
