import AgentCore
import Foundation

/// The uploader's fixed rules, in one place (the tunable numbers live in `[upload]`
/// and `[server]`; these are the contract's and rarely worth changing).
public struct UploadPolicy: Sendable, Equatable {
    /// Delays after failures that do not blame the records.
    public var backoff = BackoffSchedule()
    /// Failures in a row (any stream) that open the endpoint's circuit breaker.
    public var breakerThreshold = 3
    /// The half-open probe: one batch this small.
    public var probeMaxRecords = 10
    public var probeMaxBytes = 256 * 1024
    /// Pause after a refused token: this long first, doubling up to `authPauseMaximum`.
    public var authPauseFirst: TimeInterval = 300
    public var authPauseMaximum: TimeInterval = 3_600
    /// Pause of a stream whose every record the server refuses (E007): the same growth.
    public var streamRefusalFirst: TimeInterval = 300
    public var streamRefusalMaximum: TimeInterval = 3_600
    /// The longest any wait read back after a restart may still last (the cap of a
    /// `Retry-After`), so a clock that was wrong when it was written cannot hold uploads longer.
    public var longestRestoredWait: TimeInterval = 86_400

    func authPause() -> GrowingPause { GrowingPause(first: authPauseFirst, maximum: authPauseMaximum) }
    func streamRefusal() -> GrowingPause { GrowingPause(first: streamRefusalFirst, maximum: streamRefusalMaximum) }

    public init() {}
}
