import Foundation

/// A fresh directory under the system temp dir, removed when the value is dropped.
public final class TemporaryDirectory: @unchecked Sendable {
    public let path: String

    public init(_ prefix: String = "ariata-test") throws {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        let template = "\(base)/\(prefix).XXXXXX"
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else {
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        path = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public func file(_ name: String) -> String { "\(path)/\(name)" }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
