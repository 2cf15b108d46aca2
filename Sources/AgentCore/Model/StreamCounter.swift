/// Names of the counters and details streams report (`CaptureStream.counters()`,
/// `details()`), kept in
/// `agent_state` under `StreamCounter.key(component, name)` for `status`.
public enum StreamCounter {
    /// Health lines that could not be read at all (counted, logged, skipped).
    public static let malformedLines = "malformed_lines"
    /// Health samples read but refused by the contract's rules (impossible values, units).
    public static let refusedSamples = "refused_samples"
    /// Health samples not captured because the server did not enable their metric
    /// (its `enabled_metrics`, docs/upload.md#the-servers-stream-switches).
    public static let serverSkippedSamples = "server_skipped_samples"
    /// Location fixes not written because they lay in a privacy zone (`[[location.exclude]]`).
    public static let privacySkipped = "privacy_skipped"
    /// Location fixes written coarsened (about 1 km) because they lay in a zone with `action = "coarsen"`.
    public static let privacyCoarsened = "privacy_coarsened"
    /// Location fixes not written because the receiver stood still (`[location]
    /// stationary_interval`) or had not moved `min_distance`.
    public static let stationaryThinned = "stationary_thinned"
    /// Location fixes not written because their accuracy was coarser than `[location] max_accuracy`.
    public static let tooCoarse = "too_coarse"
    /// Microphone chunks dropped at capture as silent (`[microphone] upload_silent = false`).
    public static let silentChunksDropped = "silent_chunks_dropped"

    /// Details (`CaptureStream.details()`), kept under the same keys: the microphone's
    /// device in use, why it is that one, and since when (RFC 3339).
    public static let deviceInUse = "device_in_use"
    public static let deviceReason = "device_reason"
    public static let deviceSince = "device_since"
    /// The location stream's source in use (`gpsd`, `geoclue`) and, for `source = "auto"`, why.
    public static let locationSource = "location_source"
    public static let locationSourceReason = "location_source_reason"
    /// The horizontal accuracy, metres, of the latest location fix received, written or not.
    public static let lastAccuracy = "last_accuracy"
    /// How that fix was made, when its source said (`LocationMethod.textForm`: `ip`, or
    /// `ip?` when inferred from the accuracy alone).
    public static let lastMethod = "last_method"
    /// The health stream's Bluetooth LE sensors (`SensorStatus.encode`).
    public static let bleSensors = "ble_sensors"

    /// `component` is the stream's name (`StreamName.rawValue`, the supervisor's component name).
    public static func key(_ component: String, _ name: String) -> String { "counters.\(component).\(name)" }
}
