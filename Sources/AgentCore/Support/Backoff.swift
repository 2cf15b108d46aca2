import Foundation

/// How long to wait after the Nth failure in a row: `base` × `factor`^(N−1), at most `cap`,
/// then shortened by up to `jitter` of itself (never lengthened, so the cap holds), so that
/// many devices cut off by the same outage do not all come back in the same second.
///
/// The one way retry delays are computed in the agent. Each user keeps its own numbers in
/// one visible place: the uploader's outage backoff and token pause (`UploadPolicy`), the
/// gpsd reconnect (`LocationTuning`), a failing capture device (`MicrophoneStream`), the
/// health sources' waits (`HealthSourceTuning`).
public struct Backoff: Sendable, Equatable, Codable {
    public var base: TimeInterval
    public var cap: TimeInterval
    public var factor: Double
    /// 0…1: the largest share a delay may be shortened by.
    public var jitter: Double

    public init(base: TimeInterval, cap: TimeInterval, factor: Double = 2, jitter: Double = 0) {
        self.base = max(0, base)
        self.cap = max(self.base, cap)
        self.factor = max(1, factor)
        self.jitter = min(max(jitter, 0), 1)
    }

    /// The same wait after every failure.
    public static func constant(_ seconds: TimeInterval) -> Backoff {
        Backoff(base: seconds, cap: seconds, factor: 1)
    }

    /// The delay after `failures` failures in a row (1 for the first; less counts as 1).
    /// - Parameter random: a value in [0, 1) that draws the jitter; 0 gives the full step.
    public func delay(afterFailures failures: Int, random: Double = 0) -> TimeInterval {
        let step = min(base * pow(factor, Double(min(max(failures - 1, 0), 60))), cap)
        return step * (1 - jitter * min(max(random, 0), 1))
    }
}
