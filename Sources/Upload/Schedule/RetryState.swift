import AgentCore
import Foundation

/// One stream's state of retrying: how many times in a row it failed and when it may try again.
struct RetryState: Sendable, Equatable, Codable {
    private var counter = RetryCounter()
    var failures: Int { counter.failures }
    var nextAttemptAt: Date?
    var reason: String?
    var code: AgentErrorCode?
    /// The wait is the server's own `Retry-After`: the network coming back does not cut it short.
    var serverAsked = false

    mutating func failed(at now: Date, reason: String, code: AgentErrorCode?, retryAfter: TimeInterval?,
                         schedule: Backoff, random: Double) {
        nextAttemptAt = now.addingTimeInterval(counter.failed(backoff: schedule, retryAfter: retryAfter, random: random))
        self.reason = reason
        self.code = code
        serverAsked = retryAfter != nil
    }

    // The counter is stored as the count it was before it had a type of its own.
    private enum CodingKeys: String, CodingKey {
        case counter = "failures", nextAttemptAt, reason, code, serverAsked
    }
}
