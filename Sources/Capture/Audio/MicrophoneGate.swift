import AgentCore
import Foundation
import Platform
import Synchronization

/// Whether the microphone may capture now and, if not, why: the quiet hours
/// (`[[microphone.quiet]]`), a muted place (a `[[location.exclude]]` zone with
/// `microphone = "mute"`, from the location stream's latest fix), or what the daemon holds
/// it for (a pause, the server's switch). It reports each change of that state to its
/// observers, and tells when the next change by the clock falls, so the daemon arms one
/// timer for it and wakes for nothing else.
///
/// The capture thread asks it about each block before encoding it (`closedFrom`), so a
/// chunk ends at the boundary itself and no audio of a muted span is written anywhere; the
/// daemon stops the stream and starts a new one when the span ends
/// (docs/streams/microphone.md, "Quiet hours and muted places").
public final class MicrophoneGate: Sendable {
    /// Why the microphone does not capture. `schedule` and `place` are what a Virtues
    /// box's `muted_by` says.
    public enum Reason: String, Sendable, Equatable {
        case schedule
        case place
        case paused
        case server

        /// Whether the person's own rules (quiet hours, a muted place) decided it.
        public var isMute: Bool { self == .schedule || self == .place }
    }

    /// The state at one moment: capturing (`closedBy` nil) or not and why; since when, and
    /// until when as far as known (a quiet span's end, a muted place's fix running out).
    public struct State: Sendable, Equatable {
        public var closedBy: Reason?
        public var since: Date
        public var until: Date?

        public init(closedBy: Reason?, since: Date, until: Date?) {
            self.closedBy = closedBy
            self.since = since
            self.until = until
        }
    }

    /// Called with the state before and after each change, outside the gate's lock.
    public typealias Observer = @Sendable (_ old: State, _ new: State) -> Void

    /// The latest fix as the gate keeps it: not where it was, only whether it lay in a
    /// zone that mutes, when it came, and when the run of fixes inside began.
    private struct Place {
        var inside: Bool
        var at: Date
        var enteredAt: Date
    }

    private struct Inner {
        /// The muted place span of the run of fixes inside, to the moment the latest of
        /// them runs out; nil while the latest fix is outside.
        var placeSpan: DateInterval? {
            guard let place, place.inside else { return nil }
            return DateInterval(start: place.enteredAt, end: place.at.addingTimeInterval(fixAge))
        }

        var schedule: QuietSchedule
        var zones: [PrivacyZone]
        var fixAge: TimeInterval
        var place: Place?
        /// The last muted place span that ended: audio timed inside it stays out even when
        /// it is read after (what a device still held when the fix that left came).
        var lastPlaceSpan: DateInterval?
        var held: Reason?
        var state: State?
        var observers: [Observer] = []
        /// The schedule's phase and the moment it was read: good until it changes.
        var phase: (at: Date, phase: QuietSchedule.Phase)?
    }

    private let clock: any WallClock
    private let inner: Mutex<Inner>

    public init(microphone: MicrophoneConfig, zones: [PrivacyZone], timeZone: TimeZone = .current,
                clock: any WallClock = SystemClock()) {
        self.clock = clock
        inner = Mutex(Inner(schedule: QuietSchedule(microphone.quiet, timeZone: timeZone),
                            zones: zones.filter { $0.microphone == .mute },
                            fixAge: TimeInterval(microphone.mutedPlaceFixAge)))
    }

    /// The gate of a configuration: its quiet hours and the zones that mute.
    public convenience init(config: AgentConfig, timeZone: TimeZone = .current, clock: any WallClock = SystemClock()) {
        self.init(microphone: config.microphone, zones: config.location.exclude, timeZone: timeZone, clock: clock)
    }

    /// A reload's configuration; the state is evaluated again and a change reported.
    public func use(_ config: AgentConfig) {
        inner.withLock { s in
            s.schedule.blocks = config.microphone.quiet
            s.zones = config.location.exclude.filter { $0.microphone == .mute }
            s.fixAge = TimeInterval(config.microphone.mutedPlaceFixAge)
            s.phase = nil
        }
        _ = evaluate()
    }

    public func addObserver(_ observer: @escaping Observer) {
        inner.withLock { $0.observers.append(observer) }
    }

    /// A fix from the location stream (its thread); the state is evaluated at once.
    public func observe(latitude: Double, longitude: Double) {
        let now = clock.now()
        let changed = inner.withLock { s -> Bool in
            guard !s.zones.isEmpty else { return false }
            let inside = s.zones.contains { $0.contains(latitude: latitude, longitude: longitude) }
            // Only a change of side is news; a fix on the same side refreshes its age.
            if let place = s.place, place.inside == inside, inside, now.timeIntervalSince(place.at) <= s.fixAge {
                s.place?.at = now
                return false
            }
            if let span = s.placeSpan { s.lastPlaceSpan = DateInterval(start: span.start, end: max(span.start, min(span.end, now))) }
            let wasInside = s.place?.inside
            s.place = Place(inside: inside, at: now, enteredAt: now)
            return wasInside != inside || inside
        }
        if changed { _ = evaluate() }
    }

    /// What the daemon holds the microphone for besides the person's rules (a pause, the
    /// server's switch), nil when nothing: kept so that the state says every reason.
    public func hold(_ reason: Reason?) {
        let changed = inner.withLock { s -> Bool in
            defer { s.held = reason }
            return s.held != reason
        }
        if changed { _ = evaluate() }
    }

    /// The state now, with any change since the last evaluation reported to the observers.
    @discardableResult
    public func evaluate() -> State {
        let now = clock.now()
        let (old, new, observers) = inner.withLock { s -> (State?, State, [Observer]) in
            let decided = decide(&s, at: now)
            let old = s.state
            guard old?.closedBy != decided.closedBy else {
                // The same reason: keep its start, take the newest end.
                if var kept = old {
                    kept.until = decided.until
                    s.state = kept
                    return (nil, kept, [])
                }
                s.state = decided
                return (nil, decided, [])
            }
            var new = decided
            // A span begins where the one before ended, never earlier (the rule may say its
            // cause began before the daemon knew it, or before the previous reason ended).
            if let old {
                // Capture resumes when the reason before ended (a quiet span's end, a fix
                // running out), however late this evaluation comes.
                let oldEnd = old.until.map { min($0, now) } ?? now
                new.since = new.closedBy == nil ? oldEnd : max(new.since, oldEnd)
            } else {
                new.since = now
            }
            s.state = new
            return (old, new, s.observers)
        }
        if let old { for observer in observers { observer(old, new) } }
        return new
    }

    /// The capture thread's question for the audio from `from` to `to`: the first moment
    /// in it the quiet hours or a muted place close the microphone, nil when neither does.
    public func closedFrom(_ from: Date, to: Date) -> Date? {
        inner.withLock { s -> Date? in
            var first: Date?
            let phase = currentPhase(&s, at: from)
            if phase.quiet {
                first = from
            } else if let change = phase.changesAt, change < to {
                first = change
            }
            for span in [s.lastPlaceSpan, s.placeSpan].compactMap({ $0 }) where span.start < to && span.end > from {
                let muted = max(from, span.start)
                first = first.map { min($0, muted) } ?? muted
            }
            return first
        }
    }

    /// The first moment from `closed` (a moment `closedFrom` gave) to `to` at which
    /// neither the quiet hours nor a muted place close the microphone, nil when none.
    public func openFrom(_ closed: Date, to: Date) -> Date? {
        inner.withLock { s -> Date? in
            var moment = closed
            // Each step passes one reason's end; the quiet hours and a place can take turns.
            for _ in 0 ..< 4 {
                var moved = false
                let phase = currentPhase(&s, at: moment)
                if phase.quiet {
                    guard let end = phase.changesAt else { return nil }
                    moment = end
                    moved = true
                }
                for span in [s.lastPlaceSpan, s.placeSpan].compactMap({ $0 }) where span.start <= moment && moment < span.end {
                    moment = span.end
                    moved = true
                }
                if !moved || moment >= to { break }
            }
            return moment < to ? moment : nil
        }
    }

    /// The next moment the state may change by the clock alone (a quiet span's start or
    /// end, a muted place's fix running out), nil when none is known.
    public func nextChange(after now: Date) -> Date? {
        inner.withLock { s -> Date? in
            var next = currentPhase(&s, at: now).changesAt
            if let span = s.placeSpan, span.end > now {
                next = next.map { min($0, span.end) } ?? span.end
            }
            return next
        }
    }

    /// Forgets the state (the daemon stops): the next evaluation starts a new one from then,
    /// reporting no change.
    public func forget() {
        inner.withLock { $0.state = nil }
    }

    /// The last state evaluated (nil before the first).
    public var current: State? { inner.withLock { $0.state } }

    private func decide(_ s: inout Inner, at now: Date) -> State {
        let phase = currentPhase(&s, at: now)
        if phase.quiet {
            return State(closedBy: .schedule, since: phase.since ?? now, until: phase.changesAt)
        }
        if let span = s.placeSpan, span.start <= now, now < span.end {
            return State(closedBy: .place, since: span.start, until: span.end)
        }
        if let held = s.held { return State(closedBy: held, since: now, until: nil) }
        return State(closedBy: nil, since: now, until: phase.changesAt)
    }

    /// The schedule's phase at `moment`, read again only when `moment` leaves the span the
    /// last reading holds for (the capture thread asks at every read).
    private func currentPhase(_ s: inout Inner, at moment: Date) -> QuietSchedule.Phase {
        if let cached = s.phase, cached.at <= moment, cached.phase.changesAt.map({ moment < $0 }) ?? true,
           moment.timeIntervalSince(cached.at) < 86_400 {
            return cached.phase
        }
        let phase = s.schedule.phase(at: moment)
        s.phase = (moment, phase)
        return phase
    }
}
