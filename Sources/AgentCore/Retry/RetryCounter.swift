import Foundation

/// Failures in a row, and the wait they earn from a `Backoff`: the one way the agent
/// counts failures before it tries again (a device that will not open, gpsd or GeoClue
/// gone, a strap out of reach, a stream's uploads, the circuit breaker, a refusal's pause,
/// the server's 429).
///
/// Stored as a bare number, so state kept across restarts reads the same as a count.
public struct RetryCounter: Sendable, Equatable, Codable, ExpressibleByIntegerLiteral {
    /// Failures since the last success (0: not failing).
    public private(set) var failures: Int

    public init(failures: Int = 0) {
        self.failures = max(0, failures)
    }

    public init(integerLiteral value: Int) {
        self.init(failures: value)
    }

    public var isFailing: Bool { failures > 0 }

    /// One more failure; the wait it earns from `backoff` (the server's own `retryAfter`,
    /// when it gave one, wins unjittered).
    @discardableResult
    public mutating func failed(backoff: Backoff, retryAfter: TimeInterval? = nil, random: Double = 0) -> TimeInterval {
        failures += 1
        return retryAfter ?? backoff.delay(afterFailures: failures, random: random)
    }

    /// The wait the failures so far earn from `backoff`, without counting another.
    public func delay(from backoff: Backoff, random: Double = 0) -> TimeInterval {
        backoff.delay(afterFailures: failures, random: random)
    }

    /// One more failure, when what it waits is decided elsewhere.
    public mutating func failed() {
        failures += 1
    }

    /// A success: the next failure waits the first step again.
    public mutating func succeeded() {
        failures = 0
    }

    public init(from decoder: any Decoder) throws {
        self.init(failures: try decoder.singleValueContainer().decode(Int.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(failures)
    }
}
