/// How much disk the queue may take: the free-disk floor, the queue size cap and the
/// reserve file kept for the storage guard's own writes ([storage] in the config).
public struct StorageLimits: Sendable, Equatable {
    public static let mebibyte: Int64 = 1_048_576

    /// Size of the reserve file beside the database: what SQLite's own writes need on a
    /// full disk. The first checkpoint after the disk filled grows the database by at most
    /// the WAL not yet copied into it, which `wal_autocheckpoint` bounds to its pages plus
    /// the last transaction; a slice's deletion with `secure_delete = FAST` writes little
    /// WAL; a vacuum step is sized to a quarter of the free space. The reserve covers the
    /// largest of these with room for a large health batch being the last transaction
    /// before the disk filled (the figures: docs/performance.md; StorageGuardTests).
    public static let defaultReserveBytes: Int64 = 4 * mebibyte
    /// The automatic cap: the smaller of this and a quarter of the file system.
    public static let automaticCapCeiling: Int64 = 2_048 * mebibyte

    /// `[storage] min_free_mb`: below this much free disk the guard evicts.
    public var minFreeBytes: Int64
    /// `[storage] max_queue_mb`; nil means automatic (see `queueCap(filesystemBytes:)`).
    public var maxQueueBytes: Int64?
    public var reserveBytes: Int64

    public init(minFreeBytes: Int64 = 100 * mebibyte, maxQueueBytes: Int64? = nil,
                reserveBytes: Int64 = StorageLimits.defaultReserveBytes) {
        self.minFreeBytes = minFreeBytes
        self.maxQueueBytes = maxQueueBytes
        self.reserveBytes = reserveBytes
    }

    /// The floor the guard keeps: never less than the reserve's size, because a floor of
    /// 0 would let captures take the last byte the reserve has just handed back.
    public var effectiveFloor: Int64 { max(minFreeBytes, reserveBytes) }

    /// The queue's cap in bytes (database and WAL). Automatic: 2048 MiB or a quarter of
    /// the file system, whichever is smaller, so that on a small SD card the queue cannot
    /// crowd out the system, and on a big disk a long outage still keeps weeks of
    /// location and health and days of audio.
    public func queueCap(filesystemBytes: Int64?) -> Int64 {
        if let maxQueueBytes { return maxQueueBytes }
        guard let filesystemBytes, filesystemBytes > 0 else { return Self.automaticCapCeiling }
        return min(Self.automaticCapCeiling, filesystemBytes / 4)
    }
}
