import Foundation
import Platform
import Synchronization

/// When the queue's commits reach the disk (docs/queue.md, Durability; docs/decisions/0004-fsync-window.md).
///
/// A commit is in the WAL, in the kernel's page cache, when it returns: a kill cannot undo
/// it, only a power cut (or a kernel panic) can, until the WAL is fsynced. Every commit is
/// fsynced before it returns (SQLite's `synchronous = FULL`) except the commits of captures
/// without a file (a location fix, health samples), which may wait up to `window` seconds:
///
/// - the capture whose commit finds the oldest waiting capture `window` seconds old is
///   committed with the fsync, which makes every commit before it durable too;
/// - any other fsynced commit (an audio chunk's, every 28 s while the microphone runs)
///   does the same;
/// - the daemon's maintenance round syncs what would otherwise wait past the window before the
///   next check, a clean stop syncs what waits, and nothing waiting is read for upload
///   (the uploader's reads sync first), so the server never holds a record that a power
///   cut could take back from the queue.
///
/// With `window` 0 every commit is fsynced, as before this existed (commands other than
/// `run` keep that). The bookkeeping runs on the queue's writer, in commit order.
public final class CommitSync: Sendable {
    private struct State {
        var window: TimeInterval
        /// Boot-clock time of the oldest capture committed without an fsync since the last one.
        var oldestWaiting: Double?
    }

    private let state: Mutex<State>
    private let now: @Sendable () -> Double
    private let syncLog: @Sendable () -> Bool

    /// `now`: seconds on a clock that never jumps (CLOCK_BOOTTIME: suspend counts, since a
    /// power cut can come during it); `syncLog`: fsyncs the WAL, true when it did.
    public init(window: TimeInterval, now: @escaping @Sendable () -> Double = CommitSync.bootSeconds,
                syncLog: @escaping @Sendable () -> Bool) {
        state = Mutex(State(window: max(0, window)))
        self.now = now
        self.syncLog = syncLog
    }

    /// CLOCK_BOOTTIME in seconds (the uptime where it cannot be read): the clock `now` reads
    /// unless a test hands it a virtual one.
    @Sendable public static func bootSeconds() -> Double {
        Monotonic.bootSeconds ?? ProcessInfo.processInfo.systemUptime
    }

    /// The longest a capture without a file waits for its fsync, in seconds (0: none waits).
    public var window: TimeInterval {
        get { state.withLock { $0.window } }
        set { state.withLock { $0.window = max(0, newValue) } }
    }

    /// Whether a committed capture is waiting for its fsync.
    public var isWaiting: Bool { state.withLock { $0.oldestWaiting != nil } }

    /// Seconds the oldest waiting capture has waited; nil when none waits.
    public var oldestWait: TimeInterval? {
        let moment = now()
        return state.withLock { $0.oldestWaiting.map { moment - $0 } }
    }

    /// Whether the capture about to commit must be fsynced with its commit: one with a
    /// file (its journal goes next), any when the window is 0, and the one that finds the
    /// oldest waiting capture at the end of its window.
    public func mustSync(hasFile: Bool) -> Bool {
        let moment = now()
        return state.withLock { s in
            if hasFile || s.window <= 0 { return true }
            guard let oldest = s.oldestWaiting else { return false }
            return moment - oldest >= s.window
        }
    }

    /// After a commit: `synced` when it was fsynced (and everything before it with it).
    public func committed(synced: Bool) {
        let moment = now()
        state.withLock { s in
            if synced {
                s.oldestWaiting = nil
            } else if s.oldestWaiting == nil {
                s.oldestWaiting = moment
            }
        }
    }

    /// fsyncs the WAL when a capture has waited at least `age` seconds (0: any waiting one).
    /// Returns false only when a sync was due and failed (the captures keep waiting).
    @discardableResult
    public func flush(waitedAtLeast age: TimeInterval = 0) -> Bool {
        guard let waited = oldestWait, waited >= age else { return true }
        guard syncLog() else { return false }
        state.withLock { $0.oldestWaiting = nil }
        return true
    }
}
