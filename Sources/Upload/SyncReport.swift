import AgentCore
import Foundation

/// Progress of one stream during a cycle, for `ariata-agent sync`'s progress bar.
public struct SyncProgress: Sendable, Equatable {
    public var stream: StreamName
    /// Pending when the stream's turn began.
    public var recordsTotal: Int
    public var bytesTotal: Int64
    /// Delivered so far (payload bytes, comparable with `bytesTotal`).
    public var recordsSent: Int
    public var bytesSent: Int64
    /// Isolated as bad and marked failed so far.
    public var recordsFailed: Int
}

/// What one upload cycle did.
public struct SyncReport: Sendable, Equatable {
    /// Why a cycle sent nothing at all.
    public enum Skip: Sendable, Equatable {
        case notConfigured(reason: String)
        case authPaused(until: Date)
        case circuitOpen(until: Date)
        /// The server answered 429: every stream waits until then.
        case rateLimited(until: Date)
        /// The queue could not be read.
        case storeError(reason: String)
        case stopped
    }

    /// How a stream's turn ended.
    public enum StreamOutcome: Sendable, Equatable {
        /// Nothing pending any more.
        case drained
        /// Not tried: its retry time has not come.
        case waiting(until: Date)
        /// Not tried: the connection is metered and `[upload] on_metered` holds the
        /// stream back until an unmetered one.
        case deferredOnMeteredNetwork
        /// Tried and failed for a reason outside the records; retried at `at`.
        case retryLater(reason: String, code: AgentErrorCode?, at: Date)
        /// The token was refused.
        case unauthorized(reason: String, until: Date)
        /// The queue could not be read or written.
        case storeError(reason: String)
        /// Not reached: the cycle ended first (breaker opened, token refused, stopping).
        case notReached
    }

    public struct StreamResult: Sendable, Equatable {
        public var recordsSent = 0
        public var bytesSent: Int64 = 0
        /// Bytes on the wire (compressed when gzip is on).
        public var wireBytes: Int64 = 0
        public var recordsFailed = 0
        public var requests = 0
        public var outcome: StreamOutcome = .notReached
    }

    public var startedAt: Date
    public var finishedAt: Date
    public var skipped: Skip?
    public var streams: [StreamName: StreamResult] = [:]

    public var recordsSent: Int { streams.values.reduce(0) { $0 + $1.recordsSent } }
    public var recordsFailed: Int { streams.values.reduce(0) { $0 + $1.recordsFailed } }
    public var requests: Int { streams.values.reduce(0) { $0 + $1.requests } }
    /// True when every stream it looked at was drained.
    public var drainedAll: Bool { skipped == nil && streams.values.allSatisfy { $0.outcome == .drained } }
}

/// The uploader's waiting state, for tests and `status`: when each thing may next try.
public struct UploadSchedule: Sendable, Equatable {
    public var breaker: CircuitBreaker.State
    public var breakerTrips: Int
    public var authPausedUntil: Date?
    /// The endpoint-wide wait after a 429.
    public var rateLimitedUntil: Date?
    /// Streams whose every record the server refuses, with the end of their pause.
    public var streamRefusedUntil: [StreamName: Date]
    /// Streams that failed and wait, with the time they may try again.
    public var streamRetryAt: [StreamName: Date]
    public var streamFailures: [StreamName: Int]
}
