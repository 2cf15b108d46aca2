/// `[health]` and its `[[health.source]]` entries.
public struct HealthConfig: Sendable, Equatable {
    public var enabled: Bool = false
    /// Samples read are committed at least this often (seconds).
    public var commitInterval: Int = 300
    /// The `[[health.source]]` entries, each of one kind (`HealthSourceSettings`).
    public var sources: [HealthSourceSettings] = []
    /// The metrics the server lets the device capture (its `enabled_metrics`), nil for all.
    /// Not a key of the file: the daemon sets it from the server's answer
    /// (docs/upload.md#the-servers-stream-switches).
    public var serverMetrics: Set<String>?
    /// Bluetooth LE sources: one heart-rate sample per this many seconds (the mean of the
    /// window's readings).
    public var bleHeartRateSeconds: Int = 5
    /// Bluetooth LE sources: one heart-rate variability sample (SDNN) per this many seconds
    /// of RR intervals (docs/streams/health.md#heart-rate-variability).
    public var hrvWindowSeconds: Int = 300

    public init() {}

}

extension HealthConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.bool("enabled", \.enabled),
         .int("commit_interval", \.commitInterval, range: 1...3_600, unit: "seconds"),
         .int("ble_heart_rate_seconds", \.bleHeartRateSeconds, range: 1...3_600, unit: "seconds"),
         // Below 60 s the figure is an ultra-short-term one, not comparable with a 5-minute
         // SDNN; allowed for tests and for people who know that (docs/streams/health.md).
         .int("hrv_window_seconds", \.hrvWindowSeconds, range: 10...3_600, unit: "seconds"),
         .tables("source", \.sources)]
    }

    func validate(_ s: ConfigSection) throws {
        if enabled && sources.isEmpty {
            throw s.error("source", "health is enabled but no [[health.source]] is configured: add one or set enabled = false")
        }
    }
}
