import Foundation

// Benchmarks: each area measures itself in its own file; this only dispatches.
let benchmarks: [String: ([String]) throws -> Void] = [
    "queue": QueueBench.run,
    "upload": UploadBench.run,
    "location": LocationBench.run,
    "audio": AudioBench.run,
    "journal": AudioJournalBench.run,
    "health": HealthBench.run,
    "export": ExportBench.run,
    "metrics": MetricsBench.run,
    "power": PowerBench.run,
    "footprint": FootprintBench.run,
]

let arguments = Array(CommandLine.arguments.dropFirst())
guard let name = arguments.first, let bench = benchmarks[name] else {
    print("usage: ariata-bench <\(benchmarks.keys.sorted().joined(separator: "|"))> [options]")
    exit(64)
}
do {
    try bench(Array(arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("ariata-bench \(name): \(error)\n".utf8))
    exit(1)
}
