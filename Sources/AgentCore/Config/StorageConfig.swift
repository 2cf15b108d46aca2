/// `[storage]`: the queue database, retention and the storage guard.
public struct StorageConfig: Sendable, Equatable {
    public static let defaultDatabase = "/var/lib/ariata/agent.sqlite"

    public var database: String = StorageConfig.defaultDatabase
    public var retentionDays: Int = 3
    public var minFreeMB: Int = 100
    /// 0: automatic, the smaller of 2048 MB and a quarter of the file system under the
    /// database (`StorageLimits.queueCap`).
    public var maxQueueMB: Int = 0
    /// Seconds a location fix or a health sample may wait for its fsync after its commit
    /// (what a power cut can cost; a kill costs nothing). 0: every commit is fsynced.
    public var syncSeconds: Int = 30

    public init() {}

    public var retention: RetentionPolicy {
        RetentionPolicy(keepUploaded: Double(retentionDays) * 86_400, keepFailed: Double(retentionDays) * 86_400,
                        minFreeBytes: Int64(minFreeMB) * 1_048_576)
    }

    /// The storage guard's floor, cap and reserve.
    public var limits: StorageLimits {
        StorageLimits(minFreeBytes: Int64(minFreeMB) * StorageLimits.mebibyte,
                      maxQueueBytes: maxQueueMB == 0 ? nil : Int64(maxQueueMB) * StorageLimits.mebibyte)
    }

}

extension StorageConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.string("database", \.database),
         .int("retention_days", \.retentionDays, range: 1...365, unit: "days"),
         .int("min_free_mb", \.minFreeMB, range: 0...1_000_000, unit: "MB"),
         .int("max_queue_mb", \.maxQueueMB, range: 0...1_000_000,
              unit: "MB (0 means automatic: 2048 MB or a quarter of the file system, whichever is smaller)"),
         .int("sync_seconds", \.syncSeconds, range: 0...300, unit: "seconds (0 fsyncs every commit)")]
    }
}
