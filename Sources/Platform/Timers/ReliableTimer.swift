import Dispatch
import Foundation
import Synchronization

/// A repeating timer (or a one-time deadline, `runOnce`) over Dispatch whose deadlines are
/// wall-clock times.
///
/// Why two Dispatch sources: a deadline on the wall clock (`DispatchWallTime`,
/// CLOCK_REALTIME) keeps counting while a laptop is suspended, so a timer due during an
/// hour of sleep fires once on resume instead of waiting out the rest of its interval
/// (missed repeats are not replayed: one fire, then every interval from then). A wall
/// deadline alone would be postponed by a clock set backwards (NTP correcting a clock
/// that ran ahead), so a guard on the monotonic clock (`DispatchTime`) is armed for the
/// same moment; whichever fires first runs the handler once and both are re-armed.
///
/// - Suspend: fires once on resume when the deadline passed during sleep.
/// - Clock jumps forward past the deadline: fires at once, then every interval.
/// - Clock jumps backward: the monotonic guard fires after the interval of elapsed time,
///   so the tick is never postponed by the jump.
///
/// The handler runs on the timer's own serial queue, so runs never overlap: a handler
/// that takes longer than the interval delays the next run, it does not pile runs up.
/// Every method may be called from any thread, including from inside the handler.
public final class ReliableTimer: Sendable {
    private struct Armed {
        var wall: any DispatchSourceTimer
        var guardTimer: any DispatchSourceTimer
        /// When the next run is due, on the wall clock.
        var deadline: Date
        /// nil: runs once (`runOnce`), then stops.
        var interval: TimeInterval?
    }

    private struct State {
        var armed: Armed?
        /// Bumped on every (re)arm and stop, so a fire that was already queued by a source
        /// that has since been replaced does nothing.
        var generation: UInt64 = 0
        var fireCount: Int = 0
        /// The thread running the handler, while it runs.
        var handlerThread: pthread_t?
    }

    // No queue-specific value marks this queue (the handler's thread is kept instead):
    // releasing a queue that has one hands the value's clean-up to Dispatch's default
    // global queue, whose workers libdispatch then watches with a timer every second for
    // the life of the process (docs/decisions/0006-main-thread-executor.md); a reload replaces the daemon's timers.
    private let queue: DispatchQueue
    private let handler: @Sendable () -> Void
    private let leeway: DispatchTimeInterval
    private let state = Mutex(State())

    /// - Parameters:
    ///   - label: names the timer's queue (shows in debuggers and crash logs).
    ///   - leeway: how late the system may fire to save wake-ups.
    ///   - handler: runs on the timer's serial queue.
    public init(label: String, leeway: DispatchTimeInterval = .milliseconds(100),
                handler: @escaping @Sendable () -> Void) {
        queue = DispatchQueue(label: label)
        self.leeway = leeway
        self.handler = handler
    }

    deinit {
        state.withLock { state in
            state.armed.map(Self.cancel)
            state.armed = nil
        }
    }

    /// Starts (or restarts) the timer: first run after `firstAfter` seconds (default: one
    /// interval), then every `interval` seconds.
    public func start(interval: TimeInterval, firstAfter: TimeInterval? = nil) {
        let interval = max(interval, 0.001)
        arm(deadline: Date().addingTimeInterval(max(firstAfter ?? interval, 0)), interval: interval)
    }

    /// Runs the handler once, `seconds` from now, then stops (a deadline): the same clocks
    /// as a repeating run, and no sources made again after it runs. Replaces whatever run
    /// was due.
    public func runOnce(after seconds: TimeInterval) {
        arm(deadline: Date().addingTimeInterval(max(seconds, 0)), interval: nil)
    }

    /// Moves the next run to `date` (wall clock; a date in the past runs at once), keeping
    /// the interval for the runs after it. Does nothing when the timer is stopped.
    public func reschedule(at date: Date) {
        // Only the interval leaves the lock (nil: stopped): the dispatch sources in Armed are
        // not Sendable, and Swift 6.0 does not let withLock's `sending` result carry them.
        guard let interval = state.withLock({ $0.armed.map(\.interval) }) else { return }
        arm(deadline: date, interval: interval)
    }

    /// Moves the next run to `seconds` from now. Does nothing when the timer is stopped.
    public func reschedule(after seconds: TimeInterval) {
        reschedule(at: Date().addingTimeInterval(max(seconds, 0)))
    }

    /// Runs the handler as soon as the queue is free, and counts the next regular run
    /// one interval from then. Returns false (and runs nothing) when stopped.
    @discardableResult
    public func fireNow() -> Bool {
        reschedule(at: Date.distantPast)
        return isRunning
    }

    /// Stops the timer. After it returns no run starts. Called from outside the handler it
    /// also waits for a run in progress to finish; called from inside the handler it
    /// returns at once (the current run finishes normally).
    public func stop() {
        let inHandler = state.withLock { state -> Bool in
            state.armed.map(Self.cancel)
            state.armed = nil
            state.generation &+= 1
            return state.handlerThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
        }
        if !inHandler {
            queue.sync {}
        }
    }

    public var isRunning: Bool { state.withLock { $0.armed != nil } }

    /// When the next run is due (wall clock), nil when stopped.
    public var nextFireDate: Date? { state.withLock { $0.armed?.deadline } }

    /// How many times the handler has run since the timer was made.
    public var fireCount: Int { state.withLock { $0.fireCount } }

    // MARK: Arming

    private func arm(deadline: Date, interval: TimeInterval?) {
        state.withLock { state in
            state.generation &+= 1
            arm(&state, deadline: deadline, interval: interval)
        }
    }

    /// Replaces the armed sources; runs under the lock so that a concurrent `stop()` can
    /// never be undone by a re-arm that read the state before it.
    private func arm(_ state: inout State, deadline: Date, interval: TimeInterval?) {
        state.armed.map(Self.cancel)
        let generation = state.generation
        let wall = DispatchSource.makeTimerSource(queue: queue)
        let guardTimer = DispatchSource.makeTimerSource(queue: queue)
        // Weak: the sources hold their handlers, and the timer holds the sources.
        wall.setEventHandler { [weak self] in self?.fired(generation: generation) }
        guardTimer.setEventHandler { [weak self] in self?.fired(generation: generation) }
        wall.schedule(wallDeadline: Self.wallTime(deadline), leeway: leeway)
        let wait = max(deadline.timeIntervalSinceNow, 0)
        guardTimer.schedule(deadline: .now() + .nanoseconds(Self.nanoseconds(wait)), leeway: leeway)
        state.armed = Armed(wall: wall, guardTimer: guardTimer, deadline: deadline, interval: interval)
        wall.activate()
        guardTimer.activate()
    }

    private func fired(generation: UInt64) {
        let current = state.withLock { state -> Bool in
            // A source replaced or stopped after its fire was queued: not ours to run.
            guard state.generation == generation, let armed = state.armed else { return false }
            state.fireCount += 1
            // Re-armed before the handler runs, so a handler that reschedules or stops wins.
            state.generation &+= 1
            if let interval = armed.interval {
                arm(&state, deadline: Date().addingTimeInterval(interval), interval: interval)
            } else {
                Self.cancel(armed)
                state.armed = nil
            }
            state.handlerThread = pthread_self()
            return true
        }
        guard current else { return }
        handler()
        state.withLock { $0.handlerThread = nil }
    }

    private static func cancel(_ armed: Armed) {
        armed.wall.cancel()
        armed.guardTimer.cancel()
    }

    private static func wallTime(_ date: Date) -> DispatchWallTime {
        let seconds = date.timeIntervalSince1970
        guard seconds > 0 else { return DispatchWallTime(timespec: timespec(tv_sec: 0, tv_nsec: 1)) }
        let whole = seconds.rounded(.down)
        return DispatchWallTime(timespec: timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9)))
    }

    private static func nanoseconds(_ seconds: TimeInterval) -> Int {
        Int(min(seconds, 10 * 365 * 86_400) * 1e9)
    }
}
