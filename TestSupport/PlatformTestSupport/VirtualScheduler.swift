import Foundation
import Platform
import Synchronization

/// Timers on a clock that moves only when a test moves it, as swift-nio's
/// `EmbeddedEventLoop.advanceTime(by:)` does: the timed pause, the power policy, the
/// commit-sync deadline and the uploader's interval and backoff run in milliseconds,
/// with no wall-clock sleep (docs/development.md, Driving time in a test).
///
/// It is also the `WallClock` the components read, so their `clock.now()` and their
/// timers' deadlines are one time. It keeps two clocks, as `ReliableTimer` arms two
/// sources: a wall clock (`now()`) and a monotonic one (`monotonicSeconds()`, for what
/// reads the boot clock, such as `CommitSync`); the boot clock (`bootSeconds()`) is the
/// monotonic one plus the time spent in `suspend(for:)`.
///
/// - `advance(by:)` moves both clocks and runs every run that falls due, in deadline
///   order (ties: the order they were armed), on the calling thread, each at its own
///   moment: a 30 s timer over 100 s runs at 30, 60 and 90.
/// - `setWallClock(to:)` moves the wall clock only, as NTP or a suspend does: a jump
///   forward past a deadline runs it once (then every interval from the new time); a
///   jump backward postpones nothing, since each run also has a monotonic deadline.
/// - `suspend(for:)` is a suspend and resume: the wall and boot clocks move on, the
///   monotonic one does not, and what fell due runs once on resume.
///
/// A timer re-arms (or, for `runOnce`, stops) before its handler runs, so a handler that
/// reschedules or stops its own timer wins, as with `ReliableTimer`. A run a handler makes
/// due at or before the current moment runs in the same `advance`, after the handler.
public final class VirtualScheduler: TimerScheduling, WallClock {
    private struct State {
        var wall: Date
        var monotonic: TimeInterval = 0
        /// Seconds spent in `suspend(for:)`: the boot clock's lead over the monotonic one.
        var suspended: TimeInterval = 0
        /// Bumped each time a timer is armed: ties between deadlines run in arming order.
        var armings: UInt64 = 0
        var timers: [Weak] = []
        var advancing = false
    }

    private struct Weak {
        weak var timer: VirtualTimer?
    }

    private let state: Mutex<State>

    public init(wallClock start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = Mutex(State(wall: start))
    }

    public func now() -> Date { state.withLock { $0.wall } }

    /// Seconds on a clock that never jumps: moved by `advance(by:)` only.
    public func monotonicSeconds() -> TimeInterval { state.withLock { $0.monotonic } }

    /// Seconds on the boot clock: the monotonic clock plus the time suspended.
    public func bootSeconds() -> TimeInterval? { state.withLock { $0.monotonic + $0.suspended } }

    public func makeTimer(label: String, handler: @escaping @Sendable () -> Void) -> any ScheduledTimer {
        let timer = VirtualTimer(label: label, scheduler: self, handler: handler)
        state.withLock { s in
            s.timers.removeAll { $0.timer == nil }
            s.timers.append(Weak(timer: timer))
        }
        return timer
    }

    /// Moves time on by `seconds`, running every run due on the way, in order, on the
    /// calling thread. Returns how many handlers ran. Not to be called from a handler.
    @discardableResult
    public func advance(by seconds: TimeInterval) -> Int {
        let end = state.withLock { $0.monotonic } + max(seconds, 0)
        return runDue(until: end)
    }

    /// Sets the wall clock (NTP, a suspend, a user): runs at once every run whose wall
    /// deadline the new time passed (once each); the monotonic clock does not move.
    @discardableResult
    public func setWallClock(to date: Date) -> Int {
        state.withLock { $0.wall = date }
        return runDue(until: state.withLock { $0.monotonic })
    }

    /// The machine sleeps for `seconds` and wakes: the wall and boot clocks move on by
    /// that much, the monotonic clock does not; every run whose wall deadline passed runs
    /// once, at once (a Dispatch wall timer fires on resume). Returns how many ran.
    @discardableResult
    public func suspend(for seconds: TimeInterval) -> Int {
        state.withLock { s in
            s.suspended += max(seconds, 0)
            s.wall = s.wall.addingTimeInterval(max(seconds, 0))
        }
        return runDue(until: state.withLock { $0.monotonic })
    }

    /// More runs than this at one moment is a timer re-armed for now by its own handler.
    private static let runsPerMoment = 10_000

    /// Runs what is due by `end` (monotonic), then leaves both clocks at `end`.
    private func runDue(until end: TimeInterval) -> Int {
        let nested = state.withLock { s -> Bool in
            defer { s.advancing = true }
            return s.advancing
        }
        precondition(!nested, "VirtualScheduler: advance(by:) or setWallClock(to:) called from a timer's handler")
        defer { state.withLock { $0.advancing = false } }
        var ran = 0, atThisMoment = 0
        while let next = nextDue(by: end) {
            let (timer, at) = next
            // A handler that keeps re-arming its timer for the moment it runs at would
            // spin here for ever (and busy-spin a real timer): stop with its name instead.
            atThisMoment = at == monotonicSeconds() ? atThisMoment + 1 : 0
            precondition(atThisMoment < Self.runsPerMoment,
                         "VirtualScheduler: '\(timer.label)' ran \(Self.runsPerMoment) times without time moving")
            state.withLock { s in
                s.wall = s.wall.addingTimeInterval(at - s.monotonic)
                s.monotonic = at
            }
            if timer.fire() { ran += 1 }
        }
        state.withLock { s in
            s.wall = s.wall.addingTimeInterval(end - s.monotonic)
            s.monotonic = end
        }
        return ran
    }

    /// The timer due first by `end` and the monotonic moment it is due (never before now).
    private func nextDue(by end: TimeInterval) -> (VirtualTimer, TimeInterval)? {
        let (timers, wall, monotonic) = state.withLock { s in (s.timers.compactMap(\.timer), s.wall, s.monotonic) }
        var best: (timer: VirtualTimer, at: TimeInterval, arming: UInt64)?
        for timer in timers {
            guard let armed = timer.armed else { continue }
            // Whichever of the two deadlines comes first, as ReliableTimer's two sources.
            let byWall = monotonic + armed.wallDeadline.timeIntervalSince(wall)
            let at = max(min(byWall, armed.monotonicDeadline), monotonic)
            guard at <= end else { continue }
            if let current = best, (current.at, current.arming) <= (at, armed.arming) { continue }
            best = (timer, at, armed.arming)
        }
        return best.map { ($0.timer, $0.at) }
    }

    /// Deadlines for a run `date` on the wall clock (a date in the past: now).
    fileprivate func arm(at date: Date) -> VirtualTimer.Armed.Deadlines {
        state.withLock { s in
            s.armings &+= 1
            let wait = max(date.timeIntervalSince(s.wall), 0)
            return .init(wall: date, monotonic: s.monotonic + wait, arming: s.armings)
        }
    }
}

/// One timer of a `VirtualScheduler`; its handler runs inside the scheduler's `advance`.
final class VirtualTimer: ScheduledTimer {
    struct Armed {
        struct Deadlines {
            var wall: Date
            var monotonic: TimeInterval
            var arming: UInt64
        }
        var wallDeadline: Date
        var monotonicDeadline: TimeInterval
        var arming: UInt64
        /// nil: runs once, then stops.
        var interval: TimeInterval?

        init(_ deadlines: Deadlines, interval: TimeInterval?) {
            wallDeadline = deadlines.wall
            monotonicDeadline = deadlines.monotonic
            arming = deadlines.arming
            self.interval = interval
        }
    }

    private struct State {
        var armed: Armed?
        var fireCount = 0
    }

    let label: String
    // Strong: the scheduler holds its timers weakly, so there is no cycle.
    private let scheduler: VirtualScheduler
    private let handler: @Sendable () -> Void
    private let state = Mutex(State())

    init(label: String, scheduler: VirtualScheduler, handler: @escaping @Sendable () -> Void) {
        self.label = label
        self.scheduler = scheduler
        self.handler = handler
    }

    var armed: Armed? { state.withLock { $0.armed } }

    func start(interval: TimeInterval, firstAfter: TimeInterval?) {
        let interval = max(interval, 0.001)
        arm(at: scheduler.now().addingTimeInterval(max(firstAfter ?? interval, 0)), interval: interval)
    }

    func runOnce(after seconds: TimeInterval) {
        arm(at: scheduler.now().addingTimeInterval(max(seconds, 0)), interval: nil)
    }

    func reschedule(at date: Date) {
        guard let armed else { return }
        arm(at: date, interval: armed.interval)
    }

    func reschedule(after seconds: TimeInterval) {
        reschedule(at: scheduler.now().addingTimeInterval(max(seconds, 0)))
    }

    /// Due at once: it runs at the next `advance` (by any amount, 0 too).
    @discardableResult
    func fireNow() -> Bool {
        reschedule(at: Date.distantPast)
        return isRunning
    }

    func stop() {
        state.withLock { $0.armed = nil }
    }

    var isRunning: Bool { armed != nil }
    var nextFireDate: Date? { armed?.wallDeadline }
    var fireCount: Int { state.withLock { $0.fireCount } }

    private func arm(at date: Date, interval: TimeInterval?) {
        let deadlines = scheduler.arm(at: date)
        state.withLock { $0.armed = Armed(deadlines, interval: interval) }
    }

    /// One run: re-armed (or stopped) first, so what the handler does to its timer wins.
    func fire() -> Bool {
        guard let interval = state.withLock({ s -> TimeInterval?? in
            guard let armed = s.armed else { return nil }
            s.fireCount += 1
            s.armed = nil
            return .some(armed.interval)
        }) else { return false }
        if let interval {
            arm(at: scheduler.now().addingTimeInterval(interval), interval: interval)
        }
        handler()
        return true
    }
}
