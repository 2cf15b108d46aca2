import AgentCore
import Daemon
import Foundation
import Logging
import Rigs

/// Cost of one `[metrics] textfile` write, the work the daemon adds to each maintenance round:
/// `swift run -c release ariata-bench metrics [--ticks 200]`. The queue holds a day of
/// data (ExportBench's), the file goes to a temporary directory. The write happens inside
/// the maintenance round's existing wake-up, so it adds no wake-ups of its own.
enum MetricsBench {
    static func run(ticks: Int) throws {
        let dir = try TemporaryDirectory("metrics-bench")
        let database = try AgentDatabase(path: dir.file("agent.sqlite"))
        try ExportBench.fill(database, start: Date().addingTimeInterval(-86_400), fixes: 8_600, chunks: 2_900, chunkBytes: 2_000, samples: 1_500)
        var config = AgentConfig()
        config.file = dir.file("agent.toml")
        config.storage.database = database.path
        config.server.endpoint = "https://example.org"
        config.metrics.textfile = dir.file("ariata-agent.prom")
        let writer = MetricsTextfile(logger: Logger(.bench))
        writer.write(config: config)   // warm up
        let cpuBefore = ExportBench.cpuSeconds()
        let started = Date()
        for _ in 0..<ticks { writer.write(config: config) }
        let cpu = (ExportBench.cpuSeconds() - cpuBefore) / Double(ticks)
        let wall = Date().timeIntervalSince(started) / Double(ticks)
        let bytes = (try? FileManager.default.attributesOfItem(atPath: dir.file("ariata-agent.prom"))[.size] as? NSNumber)?.intValue ?? 0
        print(String(format: "measured: metrics textfile write: %.2f ms CPU, %.2f ms wall per tick (%d bytes); "
                     + "at the default check_interval of 30 s: %.2f s CPU per hour, 0 extra wake-ups", cpu * 1_000, wall * 1_000, bytes, cpu * 120))
    }
}
