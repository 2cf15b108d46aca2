import AgentCore
import ArgumentParser
import Foundation

/// `--dir D`: where a benchmark's work directory goes.
struct WorkDirectoryOption: ParsableArguments {
    @Option(name: .customLong("dir"), help: ArgumentHelp("Where the work directory goes (default: $TMPDIR or /tmp).", valueName: "directory"))
    var directory: String?

    /// A new directory for this run (`ariata-<bench>-bench-<pid>` under `--dir`); the
    /// caller removes it.
    func workDirectory(_ bench: String) throws -> String {
        let work = ((directory ?? NSTemporaryDirectory()) as NSString).appendingPathComponent("ariata-\(bench)-bench-\(getpid())")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        return work
    }
}

/// The backlog the upload benchmark and `footprint drain` send: `--records`, `--audio-bytes`,
/// `--batch-max-bytes`.
struct BacklogOptions: ParsableArguments {
    @Option(help: "Audio records in the backlog.")
    var records = 20_000
    /// Raw audio bytes per record; base64 makes the record about 4/3 of this (80 KB).
    @Option(help: "Raw audio bytes per record (base64 on the wire: about 4/3 of it).")
    var audioBytes = 60_000
    @Option(help: "The largest request body ([upload] batch_max_bytes).")
    var batchMaxBytes = UploadConfig().batchMaxBytes
    var batchMaxRecords: Int { UploadConfig().batchMaxRecords }

    func validate() throws {
        try requirePositive(records, "--records")
        try requirePositive(audioBytes, "--audio-bytes")
        try requirePositive(batchMaxBytes, "--batch-max-bytes")
    }
}

/// A value an option needs above zero: a usage error that names the option otherwise
/// (a wrong value once ran with the default instead).
func requirePositive(_ value: Int, _ option: String) throws {
    guard value > 0 else { throw ValidationError("\(option) takes a positive whole number, not \(value)") }
}

func requireWithin(_ value: Int, _ range: ClosedRange<Int>, _ option: String) throws {
    guard range.contains(value) else {
        throw ValidationError("\(option) takes \(range.lowerBound) to \(range.upperBound), not \(value)")
    }
}

func requireAtLeastZero(_ value: Int, _ option: String) throws {
    guard value >= 0 else { throw ValidationError("\(option) takes a whole number of 0 or more, not \(value)") }
}

/// A benchmark that could not measure: why, in a sentence (the run exits 1).
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
