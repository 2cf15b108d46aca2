import Foundation

/// What a capture stream writes to. A call that returns has put its records on disk.
public protocol RecordSink: Sendable {
    /// Writes one record in one transaction.
    func enqueue(_ record: NewRecord) throws
    /// Writes records, and the source's new anchor when given, in one transaction.
    func enqueue(_ records: [NewRecord], anchor: SourceAnchor?) throws
}

/// What the uploader reads from and marks.
public protocol UploadQueue: Sendable {
    /// Streams that have pending records, in name order.
    func streamsWithPending() throws -> [StreamName]
    /// The oldest pending records of `stream`, at most `maxCount` and at most `maxBytes`
    /// of payload; always at least one record when any is pending, however large.
    func pendingBatch(stream: StreamName, maxCount: Int, maxBytes: Int) throws -> [QueuedRecord]
    /// The most recently captured pending record of `stream`: when a whole batch was
    /// refused, the uploader sends it alone to tell bad records from a refused stream.
    func newestPending(stream: StreamName) throws -> QueuedRecord?
    /// About to send a batch of `stream`: the stream's last attempt time is written first,
    /// so a queue that cannot take writes (a full disk) refuses here, before anything is
    /// sent that it then could not mark as delivered. One small row, committed without
    /// waiting for an fsync (the delivery's commit takes it to the disk).
    func noteSending(stream: StreamName) throws
    /// The server stored these: they become `uploaded` (retention deletes them later).
    func markDelivered(_ seqs: [Int64]) throws
    /// An attempt that blames the records: attempts + 1 and the error kept; a record
    /// that reaches `QueuePolicy.maxAttempts` becomes `failed`.
    func recordFailedAttempt(_ seqs: [Int64], error: String) throws
    /// An attempt that does not blame the records (network down, 5xx, 401): the time
    /// and error are kept for `status`, the attempt count is not touched.
    func noteAttempt(_ seqs: [Int64], error: String) throws
    /// The server will never take these (isolated by splitting a rejected batch).
    func markFailed(_ seqs: [Int64], error: String) throws
}

/// Where a health source has read up to. Stored with the records it produced.
public struct SourceAnchor: Sendable, Equatable {
    public var source: String
    public var device: UInt64
    public var inode: UInt64
    public var offset: Int64
    public var line: Int64
    /// Source-specific state as JSON text (a CSV header row, say).
    public var extra: String?

    public init(source: String, device: UInt64, inode: UInt64, offset: Int64, line: Int64, extra: String? = nil) {
        self.source = source
        self.device = device
        self.inode = inode
        self.offset = offset
        self.line = line
        self.extra = extra
    }
}

public enum QueuePolicy {
    /// Attempts that blame a record before it becomes `failed`.
    public static let maxAttempts = 5
}

/// Counts of one stream in one status.
public struct StreamCount: Sendable, Equatable {
    public var stream: StreamName
    public var status: RecordStatus
    public var records: Int
    public var bytes: Int64
}
