#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The bridge's two outputs: JSON event lines for the daemon (stdout, one object a line)
/// and short diagnostics for people (stderr).
enum Output {
    /// Where the event lines go: the process's stdout, kept aside by `takeStdout()` so that
    /// nothing else (a library's stray print) can write into the daemon's JSON stream.
    private static let eventFD = Mutex<Int32>(1)

    /// Moves stdout to a descriptor of its own for the events and points fd 1 at stderr.
    static func takeStdout() {
        let copy = fcntl(1, F_DUPFD_CLOEXEC, 3)
        guard copy >= 0 else { return }
        eventFD.withLock { $0 = copy }
        dup2(2, 1)
    }

    /// Writes one event line, whole, in one write(2).
    static func event(_ fields: [(String, JSONValue)]) {
        var line = "{"
        for (i, (key, value)) in fields.enumerated() {
            if i > 0 { line += "," }
            line += jsonString(key) + ":" + value.encoded
        }
        line += "}\n"
        eventFD.withLock { fd in writeAll(fd, Array(line.utf8)) }
    }

    static func error(_ code: FailureCode, _ message: String) {
        event([("event", .string("error")), ("error", .string(code.rawValue)), ("message", .string(message))])
    }

    static func diagnostic(_ message: String) {
        writeAll(2, Array("ariata-iroh-bridge: \(message)\n".utf8))
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                offset += n
            }
        }
    }
}

enum JSONValue {
    case string(String)
    case int(Int)

    var encoded: String {
        switch self {
        case .string(let s): return jsonString(s)
        case .int(let i): return String(i)
        }
    }
}

/// A JSON string literal of `text`.
func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

/// The error codes of `error` events, `failed` events and the bridge's own 502 answers.
enum FailureCode: String, Sendable {
    case badConfig = "bad_config"
    case bindFailed = "bind_failed"
    case notAllowlisted = "not_allowlisted"
    case unreachable = "unreachable"
    case connectionFailed = "connection_failed"
    case connectionLost = "connection_lost"
}

/// A failure to reach the box or to use the connection, classified for the daemon.
struct BridgeFailure: Error, Sendable {
    var code: FailureCode
    var message: String
    init(_ code: FailureCode, _ message: String) {
        self.code = code
        self.message = message
    }
}
