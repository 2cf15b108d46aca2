import AgentCore
import Foundation

extension Backoff {
    /// The delay after `failures` failures in a row, unless the server said how long to
    /// wait: its `Retry-After` wins, unjittered.
    func delay(afterFailures failures: Int, retryAfter: TimeInterval?, random: Double) -> TimeInterval {
        retryAfter ?? delay(afterFailures: failures, random: random)
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
                         schedule: Backoff, random: Double) {
        failures += 1
        nextAttemptAt = now.addingTimeInterval(schedule.delay(afterFailures: failures, retryAfter: retryAfter, random: random))
        self.reason = reason
        self.code = code
        serverAsked = retryAfter != nil
    }
}
