import AgentCore
import Foundation
import Platform
import Synchronization

/// A capture waits for its fsync at most `[storage] sync_seconds`. What would wait longer
/// than that before the next maintenance round is synced at the end of its window, not now:
/// while the microphone runs, a chunk's commit (every 28 s, always fsynced) takes the
/// waiting captures first, and the deadline finds nothing left to sync. Syncing at the
/// check instead cost an fsync every check, each rewriting the WAL's last page
/// (docs/decisions/0004-fsync-window.md). Owns its one-shot timer, from the scheduler seam.
final class CommitSyncDeadline: Sendable {
    private let database: AgentDatabase
    private let scheduler: any TimerScheduling
    /// The maintenance round's period: a capture the next check still finds in its window is that check's.
    private let roundInterval: TimeInterval
    private let timer: Mutex<(any ScheduledTimer)?> = Mutex(nil)

    /// How early a deadline may sync (the timer's leeway and the clocks' difference).
    static let slack: TimeInterval = 0.5

    init(database: AgentDatabase, scheduler: any TimerScheduling, roundInterval: TimeInterval) {
        self.database = database
        self.scheduler = scheduler
        self.roundInterval = roundInterval
    }

    func start() {
        timer.withLock { $0 = scheduler.makeTimer(label: "ariata.commit-sync") { [weak self] in self?.reached() } }
    }

    func stop() {
        timer.withLock { current -> (any ScheduledTimer)? in
            defer { current = nil }
            return current
        }?.stop()
    }

    /// At each maintenance round: the oldest waiting capture is synced at the end of its
    /// window when that comes before the next check (at once when it is nearly there).
    /// A capture committed after this check is the next check's.
    func arm() {
        guard let waited = database.commitSync.oldestWait else { return }
        let left = database.commitSync.window - waited
        guard left < roundInterval else { return }
        guard left > Self.slack, let timer = timer.withLock({ $0 }) else {
            database.syncWaitingCaptures()
            return
        }
        timer.runOnce(after: left)
    }

    /// Syncs when the capture it was armed for still waits (one that a later fsync took
    /// leaves a younger one, the next check's to arm).
    private func reached() {
        database.syncWaitingCaptures(waitedAtLeast: database.commitSync.window - Self.slack)
    }
}
