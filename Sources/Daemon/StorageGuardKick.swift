import AgentCore
import Dispatch
import Foundation
import Synchronization

/// Runs a storage guard pass soon after a write failed for lack of space, off the thread
/// that failed (a capture thread must not wait on an eviction). Requests coalesce: while
/// a pass is queued or running, more requests add nothing, and a pass starts at most once
/// a second, so a stream that keeps failing on a disk nobody can free does not spin.
final class StorageGuardKick: Sendable {
    private let storageGuard: StorageGuard
    private let queue = DispatchQueue(label: "ariata.storage-kick")
    private let state = Mutex(State())

    private struct State {
        var scheduled = false
        var stopped = false
        var lastStart: DispatchTime?
    }

    init(_ storageGuard: StorageGuard) {
        self.storageGuard = storageGuard
    }

    func request() {
        let delay = state.withLock { s -> Double? in
            guard !s.stopped, !s.scheduled else { return nil }
            s.scheduled = true
            let since = s.lastStart.map { Double(DispatchTime.now().uptimeNanoseconds - $0.uptimeNanoseconds) / 1e9 } ?? 1
            return max(0, 1 - since)
        }
        guard let delay else { return }
        queue.asyncAfter(deadline: .now() + delay) { [self] in
            let go = state.withLock { s -> Bool in
                s.scheduled = false
                s.lastStart = .now()
                return !s.stopped
            }
            if go { storageGuard.pass() }
        }
    }

    /// No pass starts after this returns (one in progress is waited for).
    func stop() {
        state.withLock { $0.stopped = true }
        queue.sync {}
    }

    func resume() {
        state.withLock { $0.stopped = false }
    }
}
