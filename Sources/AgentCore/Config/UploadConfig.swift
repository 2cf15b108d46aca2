/// `[upload]`: when and in what portions the queue is sent.
public struct UploadConfig: Sendable, Equatable {
    /// Seconds between upload cycles.
    public var interval: Int = 300
    public var batchMaxRecords: Int = 500
    /// Bound on the JSON of one request, so a backlog never sits in memory at once.
    public var batchMaxBytes: Int = 1_000_000

    public init() {}

    init(_ s: ConfigSection) throws {
        interval = try s.int("interval", default: interval, range: 5...86_400, unit: "seconds")
        batchMaxRecords = try s.int("batch_max_records", default: batchMaxRecords, range: 1...100_000)
        batchMaxBytes = try s.int("batch_max_bytes", default: batchMaxBytes, range: 1_000...100_000_000, unit: "bytes")
        try s.finish()
    }
}
