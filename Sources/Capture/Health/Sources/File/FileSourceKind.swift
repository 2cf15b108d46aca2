import AgentCore
import Foundation

/// `kind = "file"`: a file another program appends samples to (`FileSource`).
public enum FileSourceKind: HealthSourceKind {
    public static func make(_ settings: FileSourceSettings, context: HealthSourceContext) -> any HealthSource {
        FileSource(config: settings, serverMetrics: context.health.serverMetrics, queue: context.queue,
                   commitInterval: context.commitInterval, clock: context.clock, clockTrust: context.clockTrust,
                   logger: context.logger)
    }

    /// The file must be readable, or its directory exist (for a file a logger will create).
    public static func check(_ settings: FileSourceSettings, context: HealthCheckContext) -> DeviceCheck {
        let name = "health file \(settings.path)"
        let path = settings.path
        if FileManager.default.fileExists(atPath: path) {
            if access(path, R_OK) == 0 {
                return DeviceCheck(name: name, stream: .health, outcome: .ok, detail: "readable")
            }
            return DeviceCheck(name: name, stream: .health, outcome: .failed,
                               detail: "\(AgentErrorCode.permissionDenied.rawValue) not readable",
                               fix: "sudo setfacl -m u:\(context.serviceUser):r \(path) (or chmod o+r)")
        }
        let directory = (path as NSString).deletingLastPathComponent
        if FileManager.default.fileExists(atPath: directory) {
            return DeviceCheck(name: name, stream: .health, outcome: .warning,
                               detail: "does not exist yet; it is read from its start when it appears")
        }
        return DeviceCheck(name: name, stream: .health, outcome: .failed, detail: "neither the file nor its directory exists",
                           fix: "correct [[health.source]] path")
    }
}

/// What a file source counts beyond the common counters.
public struct FileSourceStatus: HealthSourceKindStatus {
    /// The first import of an existing file, while and after it runs.
    public var backfill: BackfillProgress?
    /// The file has been read to its end at least once since the source started.
    public var caughtUp = false

    public init() {}
}

/// Progress of the first import of an existing file (the last `backfill_days` days).
public struct BackfillProgress: Sendable, Equatable {
    public var bytesDone: Int64
    public var bytesTotal: Int64
    public var samples: Int

    public var fraction: Double { bytesTotal > 0 ? min(1, Double(bytesDone) / Double(bytesTotal)) : 1 }
    public var finished: Bool { bytesDone >= bytesTotal }
}
