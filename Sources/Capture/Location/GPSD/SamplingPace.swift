import Foundation

/// When the location thread wakes. gpsd sends a report every second, but the stream needs
/// one fix per `interval`: the thread sleeps through the reports (they wait in the socket's
/// buffer) and wakes for each sampling tick, reads everything gpsd sent since, and writes
/// the latest fix. With ticks further apart than `maxReadGap` it also wakes in between,
/// only to read, so that the buffer never fills (gpsd drops a client that falls behind).
///
/// Times are seconds on the monotonic clock. Ticks keep their phase (every `interval` from
/// the start); ticks missed while the thread was held up (a slow write) are not replayed:
/// one tick, then the next one due.
struct SamplingPace: Sendable, Equatable {
    let interval: TimeInterval
    let maxReadGap: TimeInterval
    private(set) var nextTick: TimeInterval
    private(set) var nextRead: TimeInterval

    init(interval: TimeInterval, maxReadGap: TimeInterval, now: TimeInterval) {
        self.interval = max(interval, 0.001)
        self.maxReadGap = max(maxReadGap, 0.001)
        nextTick = now + self.interval
        nextRead = now + min(self.interval, self.maxReadGap)
    }

    /// True when a tick is due at `now`; the next one is then set.
    mutating func takeTick(now: TimeInterval) -> Bool {
        guard now >= nextTick else { return false }
        nextTick += interval
        if nextTick <= now { nextTick = now + interval }
        return true
    }

    /// The socket was read at `now`: the next read is due by the next tick or `maxReadGap`.
    mutating func didRead(now: TimeInterval) {
        nextRead = now + maxReadGap
    }

    /// How long the thread may sleep from `now` when it must read gpsd as well.
    func untilReadOrTick(now: TimeInterval) -> TimeInterval {
        max(0, min(nextTick, nextRead) - now)
    }

    /// How long the thread may sleep from `now` when there is nothing to read (no gpsd).
    func untilTick(now: TimeInterval) -> TimeInterval {
        max(0, nextTick - now)
    }
}
