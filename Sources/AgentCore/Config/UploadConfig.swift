/// `[upload]`: when and in what portions the queue is sent.
public struct UploadConfig: Sendable, Equatable {
    /// Seconds between upload cycles.
    public var interval: Int = 300
    public var batchMaxRecords: Int = 500
    /// Bound on the JSON of one request, so a backlog never sits in memory at once.
    public var batchMaxBytes: Int = 1_000_000

    public init() {}

}

extension UploadConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.int("interval", \.interval, range: 5...86_400, unit: "seconds"),
         .int("batch_max_records", \.batchMaxRecords, range: 1...100_000),
         .int("batch_max_bytes", \.batchMaxBytes, range: 1_000...100_000_000, unit: "bytes")]
    }
}
