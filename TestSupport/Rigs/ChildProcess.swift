import Foundation

/// A real child process for rigs (gpsd, socat, the receiver, the agent itself), with its
/// output captured to files under a directory so a failing test can show it.
public final class ChildProcess: @unchecked Sendable {
    public let process = Process()
    public let name: String
    public let stdoutPath: String
    public let stderrPath: String

    public init(_ executable: String, _ arguments: [String], name: String? = nil, logDirectory: String,
                environment: [String: String]? = nil) throws {
        self.name = name ?? (executable as NSString).lastPathComponent
        stdoutPath = "\(logDirectory)/\(self.name).\(UUID().uuidString.prefix(8)).out"
        stderrPath = stdoutPath.replacingOccurrences(of: ".out", with: ".err")
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: try Self.locate(executable))
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    public func stdout() -> String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    public func stderr() -> String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    public func signal(_ signal: Int32) { if process.isRunning { kill(pid, signal) } }

    /// Waits for exit; returns the status, or nil when it did not exit within `timeout`.
    @discardableResult
    public func wait(timeout: TimeInterval = 30) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// SIGTERM, then SIGKILL after `grace` seconds.
    public func stop(grace: TimeInterval = 5) {
        guard process.isRunning else { return }
        signal(SIGTERM)
        if wait(timeout: grace) == nil {
            signal(SIGKILL)
            wait(timeout: 5)
        }
    }

    deinit { stop(grace: 1) }

    /// An absolute path, or the first match on PATH.
    public static func locate(_ executable: String) throws -> String {
        if executable.contains("/") { return executable }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
        for dir in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"] {
            let candidate = "\(dir)/\(executable)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw NotInstalled(program: executable)
    }
}

public struct NotInstalled: Error, CustomStringConvertible {
    public let program: String
    public init(program: String) { self.program = program }
    public var description: String { "\(program) is not installed: run scripts/install-deps.sh" }
}
