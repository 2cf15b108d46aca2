import AgentCore
@testable import Capture
import Foundation
import Logging
import TestRigs
import XCTest

/// A real queue in a temp dir and helpers to run health streams on it.
final class HealthTestBed {
    let directory: TemporaryDirectory
    let database: AgentDatabase

    init() throws {
        directory = try TemporaryDirectory("ariata-health")
        database = try AgentDatabase(path: directory.file("queue.sqlite"))
    }

    func file(_ name: String) -> String { directory.file(name) }

    static var logger: Logger {
        var logger = Logger(label: "ariata.health")
        logger.logLevel = .critical
        return logger
    }

    /// - Parameter serverMetrics: the server's `enabled_metrics` (nil: every metric).
    func stream(file path: String, format: HealthLineFormat = .jsonl, backfillDays: Int = 7,
                kind: HealthSourceKindName = .file, baud: Int = 9_600, logger: Logger = HealthTestBed.logger,
                serverMetrics: Set<String>? = nil) -> HealthStream {
        let source = Self.lineSource(kind, path: path, format: format, backfillDays: backfillDays, baud: baud)
        var config = HealthConfig()
        config.enabled = true
        config.commitInterval = 1
        config.sources = [source]
        config.serverMetrics = serverMetrics
        // The test machine's clock is right whatever its kernel says about NTP (a container
        // may say "unsynchronised"): these tests are about reading, not about the clock.
        return HealthStream(config: config, database: database,
                            clockTrust: ClockTrust(sync: KernelClockSync(), trustSystemClock: true), logger: logger)
    }

    /// A file or serial source named `test-source`.
    static func lineSource(_ kind: HealthSourceKindName, path: String, format: HealthLineFormat = .jsonl,
                           backfillDays: Int = 7, baud: Int = 9_600) -> HealthSourceSettings {
        if kind == .serial {
            var serial = SerialSourceSettings(path: path, format: format, name: "test-source")
            serial.baud = baud
            return .serial(serial)
        }
        var file = FileSourceSettings(path: path, format: format, name: "test-source")
        file.backfillDays = backfillDays
        return .file(file)
    }

    /// The records' JSON objects in queue order.
    func payloads() throws -> [[String: Any]] {
        try database.recordQueue.records(stream: .health).map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: $0.payload) as? [String: Any])
        }
    }

    /// The records' values in queue order.
    func values() throws -> [Double] {
        try payloads().map { ($0["value"] as? NSNumber)?.doubleValue ?? .nan }
    }

    func count() throws -> Int { try database.recordQueue.count(stream: .health, status: .pending) }

    func waitForCount(_ n: Int, timeout: TimeInterval = 30) throws {
        try waitUntil("\(n) health records in the queue", timeout: timeout) { try count() >= n }
    }
}

/// Sample lines whose value is their number, so order, gaps and duplicates show.
enum SampleLines {
    /// Two days back: inside the 7-day backfill window, and 170,000 one-second steps
    /// later still not in the future.
    static let base = Date().addingTimeInterval(-2 * 86_400)

    static func jsonl(_ i: Int) -> String {
        #"{"timestamp":"\#(RFC3339.string(from: base.addingTimeInterval(Double(i))))","metric_type":"steps","value":\#(i)}"# + "\n"
    }

    static func jsonl(_ range: Range<Int>) -> String { range.map(jsonl).joined() }

    static let csvHeader = "time,steps\n"

    static func csv(_ range: Range<Int>) -> String {
        range.map { "\(RFC3339.string(from: base.addingTimeInterval(Double($0)))),\($0)\n" }.joined()
    }
}

extension FileManager {
    func append(_ text: String, to path: String) throws {
        if !fileExists(atPath: path) { _ = createFile(atPath: path, contents: nil) }
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(text.utf8))
    }
}
