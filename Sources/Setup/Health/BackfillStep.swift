import AgentCore
import Capture
import Foundation
import Logging

/// Onboarding's offer to import the last days of each health file now, with a progress
/// bar, instead of in the daemon's background on its first start. It is the daemon's
/// own file source (`HealthBackfill`), so it leaves the same anchor and the daemon goes
/// on from there: nothing is imported twice.
struct BackfillStep {
    let config: AgentConfig
    let serviceUser: String
    let prompter: any Prompter
    let console: Console
    let logger: Logger

    func run() throws {
        guard config.health.enabled else {
            console.line("  health is off: nothing to import")
            return
        }
        let files = config.health.sources.compactMap { source -> FileSourceSettings? in
            guard case .file(let file) = source, file.backfillDays > 0 else { return nil }
            return file
        }
        guard !files.isEmpty else {
            console.line("  no health file with backfill_days > 0: nothing to import")
            return
        }
        let path = config.storage.database
        let daemonLock = path + ".daemon-lock"
        // Probing creates the lock file; only probe one the daemon has made.
        if FileManager.default.fileExists(atPath: daemonLock), FileLock(path: daemonLock).isLocked() {
            console.line("  the daemon is running: it imports the health files itself (see ariata-agent status)")
            return
        }
        let directory = (path as NSString).deletingLastPathComponent
        let directoryExisted = FileManager.default.fileExists(atPath: directory)
        var database: AgentDatabase?
        for source in files {
            guard FileManager.default.fileExists(atPath: source.path) else {
                console.line("  \(source.name): no file yet; it is read from its start when it appears")
                continue
            }
            guard try prompter.confirm("  Import the last \(source.backfillDays) days of \(source.name) now?", default: true) else {
                console.line("  skipped; the daemon imports them when it starts")
                continue
            }
            if !prompter.isInteractive { console.line("  importing the last \(source.backfillDays) days of \(source.name) (--yes)") }
            do {
                if database == nil { database = try AgentDatabase(path: path, logger: logger) }
                guard let database else { continue }
                let bar = ProgressBar(label: "health")
                let status = try HealthBackfill.run(source, queue: database.recordQueue, logger: logger) { p in
                    bar.update(done: p.bytesDone, total: p.bytesTotal, detail: "\(ProgressBar.count(p.samples)) samples")
                }
                let backfill = status.kindStatus(FileSourceStatus.self)?.backfill
                bar.finish(done: backfill?.bytesDone ?? 0, total: backfill?.bytesTotal ?? 0,
                           detail: "\(ProgressBar.count(status.samplesWritten)) samples")
                if let reason = status.liveness.reason {
                    console.line("  FAIL  \(source.name): \(reason); the daemon tries again when it starts")
                } else {
                    var line = "  ok    \(source.name): imported \(ProgressBar.count(status.samplesWritten)) samples"
                    if status.malformedLines + status.rejectedSamples > 0 {
                        line += " (\(status.malformedLines) unreadable lines, \(status.rejectedSamples) refused samples: see the log)"
                    }
                    console.line(line)
                }
            } catch {
                console.line("  FAIL  cannot import \(source.name): \(error); the daemon imports it when it starts")
            }
        }
        if database != nil {
            // Made as root, they must still be the daemon's to write (it runs as the
            // service user); a directory that was there already keeps its owner.
            ServiceUserOwnership.hand([path, path + "-wal", path + "-shm"] + (directoryExisted ? [] : [directory]),
                                      to: serviceUser)
        }
    }
}
