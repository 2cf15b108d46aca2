/// Keys of `agent_state` shared between the process that writes them (the daemon, the
/// uploader) and the ones that read them (`status`, `pause`).
public enum AgentStateKey {
    /// The running daemon's pid, for `pause`/`resume` to signal it.
    public static let daemonPID = "daemon.pid"
    /// RFC 3339 time until which uploads pause because the token was refused (absent when not).
    public static let uploadAuthPausedUntil = "upload.auth_paused_until"
    /// RFC 3339 time of the next upload attempt while the endpoint is failing (absent when not).
    public static let uploadRetryAt = "upload.retry_at"
    /// JSON of what decides the uploader's next attempt (backoff, breaker, token pause, 429
    /// hold, refused streams), read back when the daemon starts again.
    public static let uploadMemory = "upload.memory"

    /// Pending records of `stream` the storage guard deleted before they were uploaded,
    /// a running total since the database was made (a whole number as text). Written in
    /// the same transaction as the deletion, so the count and the loss always agree.
    public static func evicted(_ stream: StreamName) -> String { "storage.evicted.\(stream.rawValue)" }

    /// RFC 3339 time since which the free disk has been below the floor, so that the queue
    /// does not grow and new captures replace the oldest records (absent when not).
    public static let storageBelowFloorSince = "storage.below_floor_since"

    /// JSON of the server's stream switches as last fetched (`ServerSwitches`), absent
    /// before the first answer.
    public static let serverSwitches = "server.switches"

    /// JSON of the server's identity from its `GET /health` (`ServerIdentity`), refreshed
    /// with the switches; absent before the first answer.
    public static let serverIdentity = "server.identity"

    /// The ingest applet a Virtues box named after it answered 404 for the configured one:
    /// `<box node id> <paired_at> <applet id>`, so it holds only for that box and that
    /// pairing (absent while the configured applet works).
    public static let boxApplet = "box.applet"

    /// JSON of how the Virtues box was last reached (`BoxReach`): the path (`direct`,
    /// `relay`) and when it last answered.
    public static let boxReach = "box.reach"

    /// RFC 3339 time since which the server has been sent uncompressed bodies because it
    /// answered a gzip body 400/415 (absent while gzip is off or works).
    public static let uploadPlainBodiesSince = "upload.plain_bodies_since"

    /// JSON of the daemon's latest power decision (`StoredPowerState`), absent without one.
    public static let powerState = "power.state"

    /// JSON of the microphone's muted state while the quiet hours or a muted place hold it
    /// (`StoredMicrophoneMute`), absent while they do not.
    public static let microphoneMuted = "microphone.muted"

    /// JSON of what the daemon knows of the connection's metering (`StoredMeteredState`),
    /// absent while no daemon has looked.
    public static let networkMetered = "network.metered"

    /// Failed upload attempts that ended with `code`, a running total (a whole number as text).
    public static func uploadErrors(_ code: AgentErrorCode) -> String { "upload.errors.\(code.rawValue)" }

    /// The address a Bluetooth LE source's sensor was last found under by its advertised
    /// name, when it differs from the configured one (the config keeps what the person
    /// wrote; docs/streams/health.md#a-strap-whose-address-changes).
    public static func bleAdoptedAddress(source: String) -> String { "health.ble.adopted_address.\(source)" }
}
