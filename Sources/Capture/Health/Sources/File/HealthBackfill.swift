import AgentCore
import Foundation
import Logging
import Platform

/// The backfill as onboarding runs it: a file source's first import (the last
/// `backfill_days` days of the existing file) in the foreground with progress, instead
/// of in the daemon's background. It is the same file source, so it leaves the same
/// anchor: the daemon goes on from there, and running it again imports nothing twice.
public enum HealthBackfill {
    /// Reads `config`'s file to its end, calling `progress` about five times a second,
    /// and returns the source's final status (its health says why when it could not read).
    public static func run(_ config: FileSourceSettings, queue: any HealthRecordQueue, clock: any WallClock = SystemClock(),
                           logger: Logger, progress: (BackfillProgress) -> Void) throws -> HealthSourceStatus {
        let source = FileSource(config: config, queue: queue, commitInterval: 1, clock: clock, logger: logger)
        let thread = try NamedThread(name: "ariata-backfill") { stop in source.run(until: stop) }
        while true {
            let status = source.status()
            let file = status.kindStatus(FileSourceStatus.self)
            if let backfill = file?.backfill { progress(backfill) }
            let failed = !status.liveness.isHealthy && status.liveness.reason != "starting"
            if file?.caughtUp == true || failed { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        thread.stop()
        let status = source.status()
        if let backfill = status.kindStatus(FileSourceStatus.self)?.backfill { progress(backfill) }
        return status
    }
}
