import AgentCore
import Foundation

/// Where an export writes text: standard output or a file, buffered (a day of fixes is
/// thousands of small writes).
public final class ExportOutput {
    private let handle: FileHandle
    private let closeWhenDone: Bool
    private var buffer = Data()
    public private(set) var bytesWritten: Int64 = 0

    /// `path` nil or "-": standard output. A file is made anew (mode 0600: it is personal data).
    public init(path: String?) throws {
        if let path, path != "-" {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw ExportError("cannot write \(path): \(String(cString: strerror(errno))); check the directory exists and is yours")
            }
            handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            closeWhenDone = true
        } else {
            handle = FileHandle.standardOutput
            closeWhenDone = false
        }
    }

    public func write(_ text: String) throws {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 65_536 { try flush() }
    }

    public func write(_ data: Data) throws {
        buffer.append(data)
        if buffer.count >= 65_536 { try flush() }
    }

    public func flush() throws {
        guard !buffer.isEmpty else { return }
        try handle.write(contentsOf: buffer)
        bytesWritten += Int64(buffer.count)
        buffer.removeAll(keepingCapacity: true)
    }

    public func finish() throws {
        try flush()
        if closeWhenDone { try handle.close() }
    }
}

public struct ExportError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A stored record's JSON object, for the formats that pick fields out of it.
enum ExportPayload {
    static func object(_ data: Data) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    static func number(_ value: Any?) -> Double? {
        guard let n = value as? NSNumber, !(value is Bool) else { return nil }
        return n.doubleValue
    }
}
