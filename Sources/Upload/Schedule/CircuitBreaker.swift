import AgentCore
import Foundation

/// The circuit breaker of one endpoint. After `threshold` failures in a row (of any
/// stream) it opens: no request at all until the backoff schedule says so. Then it is
/// half-open: one small batch goes as a probe; its success closes the breaker, its
/// failure opens it again for the next, longer step. So a week offline costs one probe
/// per 5 minutes, not one request per stream per cycle each waiting for a time-out.
public struct CircuitBreaker: Sendable, Equatable, Codable {
    public enum State: Sendable, Equatable, Codable {
        case closed
        case open(until: Date)
        case halfOpen
    }

    public let threshold: Int
    private var failuresInARow = RetryCounter()
    /// Times it opened since the last success: the step of the schedule it waits.
    private var opened = RetryCounter()
    public var consecutiveFailures: Int { failuresInARow.failures }
    public var trips: Int { opened.failures }
    public private(set) var openUntil: Date?

    public init(threshold: Int = 3) {
        self.threshold = max(1, threshold)
    }

    public func state(at now: Date) -> State {
        guard let openUntil else { return .closed }
        return now < openUntil ? .open(until: openUntil) : .halfOpen
    }

    public mutating func recordSuccess() {
        failuresInARow.succeeded()
        opened.succeeded()
        openUntil = nil
    }

    /// A breaker read back after a restart stays open no later than `latest`.
    mutating func limit(endingBy latest: Date) {
        if let end = openUntil, end > latest { openUntil = latest }
    }

    /// Returns true when this failure opened the breaker.
    @discardableResult
    public mutating func recordFailure(at now: Date, retryAfter: TimeInterval?, schedule: Backoff,
                                       random: Double) -> Bool {
        let wasProbe = state(at: now) == .halfOpen
        failuresInARow.failed()
        guard wasProbe || consecutiveFailures >= threshold else { return false }
        openUntil = now.addingTimeInterval(opened.failed(backoff: schedule, retryAfter: retryAfter, random: random))
        return true
    }

    // The counters are stored as the counts they were before they had a type of their own.
    private enum CodingKeys: String, CodingKey {
        case threshold, failuresInARow = "consecutiveFailures", opened = "trips", openUntil
    }
}
