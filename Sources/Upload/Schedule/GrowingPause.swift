import AgentCore
import Foundation

/// A pause that grows each time the same refusal comes back: `first`, then twice as long
/// each time, `maximum` at most, and tries again by itself when it ends (a fix on the
/// server's side needs nothing on the device). Nothing is dropped while it lasts.
///
/// Two refusals pause this way: the device token (401/403, E002: 5 min doubling to an hour;
/// a new token ends it at once) and a stream whose every record the server refuses (E007).
public struct GrowingPause: Sendable, Equatable, Codable {
    /// How long each pause lasts (`UploadTuning.authPause`, `.streamRefusal`).
    public var schedule: Backoff
    private var counter = RetryCounter()
    /// Refusals since the last success: each doubles the pause.
    public var refusals: Int { counter.failures }
    public private(set) var until: Date?

    public init(_ schedule: Backoff) {
        self.schedule = schedule
    }

    public func isPaused(at now: Date) -> Bool {
        until.map { now < $0 } ?? false
    }

    /// Refused again: pause, twice as long as the last time.
    public mutating func refused(at now: Date) -> Date {
        let end = now.addingTimeInterval(counter.failed(backoff: schedule))
        until = end
        return end
    }

    public mutating func clear() {
        counter.succeeded()
        until = nil
    }

    /// A pause read back after a restart may not end later than `latest` (a clock that
    /// was wrong when it was written must not hold uploads for days).
    mutating func limit(endingBy latest: Date) {
        if let end = until, end > latest { until = latest }
    }

    // The counter is stored as the count it was before it had a type of its own.
    private enum CodingKeys: String, CodingKey {
        case schedule, counter = "refusals", until
    }
}
