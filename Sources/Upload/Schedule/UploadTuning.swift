import AgentCore
import Foundation

/// The uploader's tunables, in one place: its waits and thresholds (those a person sets
/// live in `[upload]` and `[server]`; these are the contract's and rarely worth changing).
public struct UploadTuning: Sendable, Equatable {
    /// Delays after failures that do not blame the records (the contract's): 30 s, 60 s,
    /// 120 s, 240 s, then 300 s at most, each shortened by up to 20 % (jitter).
    public var backoff = Backoff(base: 30, cap: 300, jitter: 0.2)
    /// Failures in a row (any stream) that open the endpoint's circuit breaker.
    public var breakerThreshold = 3
    /// The half-open probe: one batch this small.
    public var probeMaxRecords = 10
    public var probeMaxBytes = 256 * 1024
    /// Pause after a refused token (E002): 5 min, doubling up to an hour.
    public var authPause = Backoff(base: 300, cap: 3_600)
    /// Pause of a stream whose every record the server refuses (E007): the same growth.
    public var streamRefusal = Backoff(base: 300, cap: 3_600)
    /// The longest any wait read back after a restart may still last (the cap of a
    /// `Retry-After`), so a clock that was wrong when it was written cannot hold uploads longer.
    public var longestRestoredWait: TimeInterval = 86_400

    func newAuthPause() -> GrowingPause { GrowingPause(authPause) }
    func newStreamRefusal() -> GrowingPause { GrowingPause(streamRefusal) }

    public init() {}
}
