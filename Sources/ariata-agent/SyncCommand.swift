import AgentCore
import ArgumentParser
import Daemon
import Foundation
import Logging
import Upload

struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Uploads the queue now, with a progress bar.",
        discussion: """
            Sends every pending record of every stream to the server now, ignoring the \
            backoff the daemon may be in (you asked for it), and prints a progress bar per \
            stream (records and bytes) and a summary.

            Only one upload runs at a time: when the daemon is uploading, sync waits for it \
            to finish (up to --wait seconds) and then sends what is left.

            Records held with provisional times (captured before the clock could be \
            believed) are corrected first when this boot's true time is known: from the \
            synchronised clock, or from what the daemon kept of it (a gpsd 3D fix). Records \
            held in an earlier boot are corrected from what that boot kept; those of a boot \
            that never knew its true time stay held.

            Exit status: 0 when everything pending was delivered; 1 when something could not \
            be delivered (the reason is printed; the records stay queued and the daemon retries); \
            75 when another upload held the lock for longer than --wait.
            """)

    @OptionGroup var options: ConfigOptions

    @Option(help: ArgumentHelp("Seconds to wait for an upload already running.", valueName: "seconds"))
    var wait: Int = 120

    func run() throws {
        let config = try AgentConfig.load(path: options.config)
        guard config.isOnboarded else {
            throw CleanExit.message("this device is not set up yet: run 'ariata-agent onboard' first")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let database = try AgentDatabase(path: config.storage.database)
        let lock = FileLock.upload(databasePath: config.storage.database)
        var held = try lock.tryAcquire()
        if held == nil {
            print("an upload is running (the daemon's); waiting up to \(wait) s for it to finish…")
            held = try lock.acquire(timeout: TimeInterval(wait))
        }
        guard let held else {
            print("gave up: the other upload still runs after \(wait) s; try again later or with a longer --wait")
            throw ExitCode(75)
        }
        defer { held.release() }

        // Held records of this boot whose true time is known go out with this sync.
        let correction = ClockCorrection(database: database, evidence: TimeEvidence(), logger: Logger(.time))
        let corrected = correction.pass(trustSystemClock: config.daemon.trustSystemClock)
        if corrected.corrected > 0 {
            print("corrected the times of \(corrected.corrected) held records (true time from \(corrected.source ?? "?"))")
        }

        let uploader = Uploader(server: config.server, box: config.box, upload: config.upload, queue: database.recordQueue,
                                logger: Logger(.sync))
        var bars: [StreamName: ProgressBar] = [:]
        var last: [StreamName: SyncProgress] = [:]
        func bar(_ stream: StreamName) -> ProgressBar {
            if let b = bars[stream] { return b }
            let b = ProgressBar(label: stream.rawValue)
            bars[stream] = b
            return b
        }
        func detail(_ p: SyncProgress) -> String {
            "\(ProgressBar.count(p.recordsSent))/\(ProgressBar.count(p.recordsTotal)) records  "
                + "\(ProgressBar.bytes(p.bytesSent))/\(ProgressBar.bytes(p.bytesTotal))"
                + (p.recordsFailed > 0 ? "  \(p.recordsFailed) refused" : "")
        }
        let report = uploader.syncNow { p in
            last[p.stream] = p
            let detail = detail(p)
            let b = bar(p.stream)
            if p.recordsSent + p.recordsFailed >= p.recordsTotal {
                b.finish(done: p.bytesSent, total: p.bytesTotal, detail: detail)
            } else {
                b.update(done: p.bytesSent, total: p.bytesTotal, detail: detail)
            }
        }
        for (stream, p) in last.sorted(by: { $0.key < $1.key }) {
            // A stream that stopped early leaves its bar open: close it where it stopped.
            bars[stream]?.finish(done: p.bytesSent, total: p.bytesTotal, detail: detail(p) + "  (stopped)")
        }
        print(SyncSummary(report: report).text)
        if !SyncSummary(report: report).delivered { throw ExitCode(1) }
    }
}
