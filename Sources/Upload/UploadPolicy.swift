import AgentCore
import Foundation
import Synchronization

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

    public init() {}
}

/// The uploader's memory between cycles. Guarded by `UploaderStateBox`'s lock; cycles
/// and `health()` hold it only for short reads and updates, never across a request.
struct UploaderState: Sendable {
    var settings: ServerSettings
    var retries: [StreamName: RetryState] = [:]
    var breaker: CircuitBreaker
    var authPause: AuthPause
    /// The last failure that did not blame the records, for `health()`.
    var lastFailure: (reason: String, code: AgentErrorCode?)?
    /// What was last written to `agent_state`, so unchanged values are not rewritten.
    var publishedRetryAt: Date?
    var publishedAuthPause: Date?
}

final class UploaderStateBox: Sendable {
    let lock: Mutex<UploaderState>

    init(_ state: UploaderState) {
        lock = Mutex(state)
    }

    func with<T>(_ body: (inout UploaderState) -> T) -> T {
        lock.withLock { body(&$0) }
    }
}
