import AgentCore
import ArgumentParser
import Capture
import Foundation
import Logging

/// The child processes the tests run (docs/development.md, Tests): a queue writer to kill,
/// a health stream to kill, a health source to start as another user. Not a benchmark and
/// not installed: it is built with the tests and found beside them (`BuildProducts`).
@main
struct TestHelper: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ariata-test-helper",
        abstract: "Child processes for ariata-agent's tests.",
        subcommands: [CrashWriter.self, HealthIngest.self, HealthProbe.self])
}

/// CrashSafetyTests kills it with SIGKILL; StatusCommandTests reads the queue while it writes.
struct CrashWriter: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crash-writer",
        abstract: "Enqueue forever; print each record id after its enqueue returned.")

    @Argument(help: "The queue's database file.")
    var database: String

    func run() throws {
        // The daemon's default `[storage] sync_seconds`: commits wait for their fsync, and a
        // kill must not cost any of them (they are in the page cache when enqueue returns).
        let database = try AgentDatabase(path: self.database, syncWindow: 30)
        var i = 0
        while true {
            let record = NewRecord(stream: i % 3 == 0 ? .microphone : .location, capturedAt: Date(),
                                   payload: Data("{\"i\":\(i),\"pad\":\"\(String(repeating: "p", count: i % 3 == 0 ? 20_000 : 200))\"}".utf8))
            try database.recordQueue.enqueue(record)
            // Unbuffered write: once it returns the line is the kernel's, whatever kills us next.
            let line = Array("\(record.id.uuidString)\n".utf8)
            _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            i += 1
        }
    }
}

/// HealthCrashTests: a health stream on one file until SIGTERM (or the test's SIGKILL).
struct HealthIngest: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health-ingest",
        abstract: "Run a health stream on one file until SIGTERM; print 'ready' once started.")

    @Argument(help: "The queue's database file.")
    var database: String
    @Argument(help: "The health file.")
    var file: String
    @Argument(help: "Its format: jsonl, csv or keyvalue.")
    var format: HealthLineFormat = .jsonl

    func run() throws {
        let database = try AgentDatabase(path: self.database)
        var config = HealthConfig()
        config.enabled = true
        config.commitInterval = 1
        config.sources = [.file(FileSourceSettings(path: file, format: format, name: "ingest"))]
        let stream = HealthStream(config: config, database: database, logger: Logger(label: "ariata.health"))
        signal(SIGTERM, SIG_IGN)
        let term = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
        term.setEventHandler {
            stream.stop()
            Foundation.exit(0)
        }
        term.resume()
        stream.start()
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        while true { Thread.sleep(forTimeInterval: 3600) }
    }
}

/// HealthSerialTests: one source started (as `nobody`, so permissions apply); its health
/// printed once it has tried to open the path.
struct HealthProbe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health-probe",
        abstract: "Start one health source and print its health once it has tried to open the path.")

    @Argument(help: "The queue's database file.")
    var database: String
    @Argument(help: "The source's kind: file or serial.")
    var kind: LineKind
    @Argument(help: "The file or device.")
    var path: String

    func run() throws {
        let database = try AgentDatabase(path: self.database)
        var config = HealthConfig()
        config.enabled = true
        config.sources = [kind == .serial ? .serial(SerialSourceSettings(path: path, name: "probe"))
                                          : .file(FileSourceSettings(path: path, name: "probe"))]
        var logger = Logger(label: "ariata.health")
        logger.logLevel = .error
        let stream = HealthStream(config: config, database: database, logger: logger)
        stream.start()
        let deadline = Date().addingTimeInterval(10)
        while stream.liveness().reason == "probe: starting", Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        print(stream.liveness())
        stream.stop()
    }

    /// The kinds of source that have a path.
    enum LineKind: String, ExpressibleByArgument { case file, serial }
}

extension HealthLineFormat: ExpressibleByArgument {}
