import AgentCore
import Foundation

/// Delays between retries of something that failed for a reason outside the records
/// (network, 5xx, 429): 30 s, 60 s, 120 s, 240 s, then 300 s at most, with jitter so
/// that many devices cut off by the same outage do not all come back in the same second.
public struct BackoffSchedule: Sendable, Equatable {
    public var steps: [TimeInterval]
    /// A delay is drawn from ((1 - jitter) x step, step]: jitter only ever shortens, so
    /// the 300 s ceiling holds.
    public var jitter: Double

    public init(steps: [TimeInterval] = [30, 60, 120, 240, 300], jitter: Double = 0.2) {
        self.steps = steps.isEmpty ? [30] : steps
        self.jitter = min(max(jitter, 0), 1)
    }

    /// The step after `failures` consecutive failures (1 = the first), before jitter.
    public func step(afterFailures failures: Int) -> TimeInterval {
        steps[min(max(failures, 1), steps.count) - 1]
    }

    /// - Parameters:
    ///   - random: a value in [0, 1).
    ///   - retryAfter: the server's `Retry-After`; it wins over the schedule, unjittered.
    public func delay(afterFailures failures: Int, retryAfter: TimeInterval? = nil, random: Double) -> TimeInterval {
        if let retryAfter { return retryAfter }
        let step = step(afterFailures: failures)
        return step * (1 - jitter * min(max(random, 0), 1))
    }
}

/// One stream's state of retrying: how many times in a row it failed and when it may try again.
struct RetryState: Sendable, Equatable, Codable {
    var failures = 0
    var nextAttemptAt: Date?
    var reason: String?
    var code: AgentErrorCode?
    /// The wait is the server's own `Retry-After`: the network coming back does not cut it short.
    var serverAsked = false

    mutating func failed(at now: Date, reason: String, code: AgentErrorCode?, retryAfter: TimeInterval?,
                         schedule: BackoffSchedule, random: Double) {
        failures += 1
        nextAttemptAt = now.addingTimeInterval(schedule.delay(afterFailures: failures, retryAfter: retryAfter, random: random))
        self.reason = reason
        self.code = code
        serverAsked = retryAfter != nil
    }
}
