import AgentCore
import Capture
import Foundation
import Logging
import Platform
import Rigs

/// `ariata-bench health [throughput [lines] | idle [seconds]]`: how fast a file source
/// ingests (parse, normalise, queue writes with anchors) and what an idle source costs.
enum HealthBench {
    static func quietLogger() -> Logger {
        var logger = Logger(.health)
        logger.logLevel = .error
        return logger
    }

    static func fileConfig(_ path: String, format: HealthLineFormat = .jsonl, name: String = "bench") -> HealthConfig {
        var config = HealthConfig()
        config.enabled = true
        config.commitInterval = 1
        config.sources = [.file(FileSourceSettings(path: path, format: format, name: name))]
        return config
    }

    // MARK: Measurements

    static func throughput(lines: Int) throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = "\(directory)/samples.jsonl"
        let start = Date().addingTimeInterval(-Double(lines))
        var text = ""
        text.reserveCapacity(lines * 100)
        for i in 0..<lines {
            let time = RFC3339.string(from: start.addingTimeInterval(Double(i)))
            text += #"{"timestamp":"\#(time)","metric_type":"heart_rate","value":\#(50 + i % 100),"unit":"bpm"}"# + "\n"
        }
        try text.write(toFile: file, atomically: false, encoding: .utf8)
        let bytes = text.utf8.count
        let database = try AgentDatabase(path: "\(directory)/queue.sqlite")
        let stream = HealthStream(config: fileConfig(file), database: database, logger: quietLogger())
        let began = Date()
        stream.start()
        while (stream.statuses().first?.samplesWritten ?? 0) < lines {
            Thread.sleep(forTimeInterval: 0.01)
        }
        let seconds = Date().timeIntervalSince(began)
        stream.stop()
        let stored = try database.recordQueue.count(stream: .health, status: .pending)
        print(String(format: "health file source: %d lines (%.1f MB JSON Lines) ingested in %.2f s = %.0f lines/s (%d records in the queue; commits of up to 5,000 while behind, 500 once caught up)",
                     lines, Double(bytes) / 1e6, seconds, Double(lines) / seconds, stored))
    }

    static func idle(seconds: Double) throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = "\(directory)/idle.jsonl"
        try (#"{"timestamp":"\#(RFC3339.string(from: Date()))","hr":60}"# + "\n").write(toFile: file, atomically: false, encoding: .utf8)
        let database = try AgentDatabase(path: "\(directory)/queue.sqlite")
        let stream = HealthStream(config: fileConfig(file, name: "idle"), database: database, logger: quietLogger())
        stream.start()
        // Let it read the one line and make its commit (commit_interval = 1 s) first.
        while (stream.statuses().first?.samplesWritten ?? 0) < 1 { Thread.sleep(forTimeInterval: 0.05) }
        Thread.sleep(forTimeInterval: 1.5)
        let wakeupsBefore = stream.statuses().first?.wakeups ?? 0
        let switchesBefore = threadContextSwitches(named: "ariata-health-1")
        Thread.sleep(forTimeInterval: seconds)
        let wakeups = (stream.statuses().first?.wakeups ?? 0) - wakeupsBefore
        let switches = threadContextSwitches(named: "ariata-health-1").map { $0 - (switchesBefore ?? 0) }
        stream.stop()
        let perMinute = Double(wakeups) * 60 / seconds
        print(String(format: "health file source idle for %.0f s: %d wakeups of the source thread (%.1f per minute); context switches of that thread per /proc: %@",
                     seconds, wakeups, perMinute, switches.map(String.init) ?? "n/a"))
    }

    /// Voluntary + involuntary context switches of the thread named `name` (Linux /proc).
    static func threadContextSwitches(named name: String) -> Int? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            guard let status = ProcStatus(path: "/proc/self/task/\(task)/status"), status.name == String(name.prefix(15)) else { continue }
            return (status.voluntaryContextSwitches ?? 0) + (status.involuntaryContextSwitches ?? 0)
        }
        return nil
    }

    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "ariata-health-bench-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
