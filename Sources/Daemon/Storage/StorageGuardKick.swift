import AgentCore
import Foundation
import Platform
import Synchronization

/// Runs a storage guard pass soon after a write failed for lack of space, off the thread
/// that failed (a capture thread must not wait on an eviction). Requests coalesce: while
/// a pass is queued or running, more requests add nothing, and a pass starts at most once
/// a second (on the monotonic clock), so a stream that keeps failing on a disk nobody can
/// free does not spin. Its one-shot timer comes from the scheduler seam, so a test drives
/// it in virtual time (docs/architecture.md, Timers).
final class StorageGuardKick: Sendable {
    private let storageGuard: StorageGuard
    private let scheduler: any TimerScheduling
    private let timer: Mutex<(any ScheduledTimer)?> = Mutex(nil)
    private let state = Mutex(State())

    private struct State {
        var scheduled = false
        var stopped = false
        /// When the last pass started, on the scheduler's monotonic clock.
        var lastStart: TimeInterval?
    }

    /// The shortest time between two passes' starts, in seconds.
    static let spacing: TimeInterval = 1

    init(_ storageGuard: StorageGuard, scheduler: any TimerScheduling = DispatchScheduler()) {
        self.storageGuard = storageGuard
        self.scheduler = scheduler
    }

    func request() {
        let now = scheduler.monotonicSeconds()
        let delay = state.withLock { s -> Double? in
            guard !s.stopped, !s.scheduled else { return nil }
            s.scheduled = true
            let since = s.lastStart.map { now - $0 } ?? Self.spacing
            return max(0, Self.spacing - since)
        }
        guard let delay else { return }
        oneShot().runOnce(after: delay)
    }

    /// The kick's timer, made on first use (a daemon whose disk never fills has none).
    private func oneShot() -> any ScheduledTimer {
        timer.withLock { timer in
            if let timer { return timer }
            let made = scheduler.makeTimer(label: "ariata.storage-kick") { [weak self] in self?.fire() }
            timer = made
            return made
        }
    }

    private func fire() {
        let now = scheduler.monotonicSeconds()
        let go = state.withLock { s -> Bool in
            s.scheduled = false
            s.lastStart = now
            return !s.stopped
        }
        if go { storageGuard.pass() }
    }

    /// No pass starts after this returns (one in progress is waited for).
    func stop() {
        state.withLock { $0.stopped = true }
        timer.withLock { $0 }?.stop()
        // A pass stopped before it ran leaves nothing queued: the next request may ask again.
        state.withLock { $0.scheduled = false }
    }

    func resume() {
        state.withLock { $0.stopped = false }
    }
}
