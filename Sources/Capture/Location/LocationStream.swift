import AgentCore
import Foundation
import Logging
import Platform
import Synchronization

/// The `location` stream: fixes from a location source in, at most one record per interval
/// out (fewer while a receiver stands still, none for a fix coarser than `max_accuracy`),
/// straight to the queue. One thread (`ariata-location`) has `LocationSourceChooser`
/// pick the source (`[location] source`) and runs it, so the source's blocking calls stay
/// off the daemon's threads. The source hands each fix to the stream and says when the
/// latest is due (`LocationFeed.tick`); the stream keeps privacy zones, writes the records
/// and reports status. The kinds are in GPSD/ and GeoClue/ (docs/streams/location.md).
public final class LocationStream: CaptureStream, LocationFeed {
    public let stream: StreamName = .location
    public let config: LocationConfig
    private let queue: any RecordSink
    private let clock: any WallClock
    private let logger: Logger
    private let tuning: LocationTuning
    private let clockTrust: ClockTrust
    private let timeEvidence: TimeEvidence
    /// One write at a time: the thread's ticks, and stop()'s last write.
    private let writing = Mutex(())
    private let zones: PrivacyZones

    /// What the thread and the other threads (health, status, stop) share.
    private struct Shared {
        var sampler = FixSampler()
        var link: LocationLink = .idle
        var lastFixReceivedAt: Date?
        var recordsWritten = 0
        var lastRecordAt: Date?
        var writeError: String?
        var timeRejectionLogged = false
        /// Fixes inside a privacy zone: not written, or written coarsened.
        var privacySkipped = 0
        var privacyCoarsened = 0
        /// Which of a receiver's fixes are worth a record while it stands still, and the
        /// fixes it kept back.
        var filter: StationaryFilter
        var stationaryThinned = 0
        /// Fixes coarser than `max_accuracy`: not written; the latest accuracy seen, for
        /// `status` to say what location is worth now.
        var tooCoarse = 0
        var lastAccuracy: Double?
        /// How the latest fix was made, when its source said (GeoClue).
        var lastMethod: LocationMethod?
        var tooCoarseLogged = false
        /// The zone the last fix lay in, so entering and leaving are logged once each.
        var inZone: String?
        /// The source in use, and why (source `auto`).
        var source: (any LocationSource)?
        var choice: String?
    }

    /// What exists only between start() and stop().
    private struct Running {
        let thread: NamedThread
    }

    private let shared: Mutex<Shared>
    private let running = Mutex<Running?>(nil)

    /// - Parameters:
    ///   - clockTrust: while the system clock cannot be believed, fix times are not
    ///     compared with it.
    ///   - timeEvidence: told the time of every 3D fix (ClockCorrection corrects held
    ///     records from it before NTP answers).
    public init(config: LocationConfig, queue: any RecordSink, clock: any WallClock = SystemClock(),
                logger: Logger, tuning: LocationTuning = LocationTuning(),
                clockTrust: ClockTrust = .live(trustSystemClock: false), timeEvidence: TimeEvidence = .shared,
                serviceMode: ServiceMode = .current(), onFix: (@Sendable (_ latitude: Double, _ longitude: Double) -> Void)? = nil) {
        self.serviceMode = serviceMode
        self.onFix = onFix
        self.config = config
        self.queue = queue
        self.clock = clock
        self.logger = logger
        self.tuning = tuning
        self.clockTrust = clockTrust
        self.timeEvidence = timeEvidence
        zones = PrivacyZones(config.exclude)
        shared = Mutex(Shared(filter: StationaryFilter(interval: config.interval, stationaryInterval: config.stationaryInterval,
                                                       minDistance: config.minDistance, window: tuning.stationaryWindow,
                                                       minimumRadius: tuning.stationaryMinRadius)))
    }

    /// A stream dropped without stop() must not leave its reader thread behind.
    deinit { stop() }

    private let serviceMode: ServiceMode
    /// Told every fix within `max_accuracy` as it comes, before sampling: the microphone's
    /// muted places (`MicrophoneGate.observe`) follow the latest fix, not the records.
    private let onFix: (@Sendable (_ latitude: Double, _ longitude: Double) -> Void)?

    public func start() {
        running.withLock { running in
            guard running == nil else { return }
            shared.withLock { $0.link = .connecting }
            let thread: NamedThread
            do {
                thread = try NamedThread(name: "ariata-location") { [weak self] waker in self?.run(until: waker) }
            } catch {
                let reason = "cannot start the location stream: \(error)"
                logger.error("\(reason)")
                shared.withLock { $0.link = .unreachable(reason: reason, since: clock.now()) }
                return
            }

            running = Running(thread: thread)
            logger.info("location stream started: source \(config.source.rawValue), a record every \(config.interval) s")
        }
    }

    /// The location thread: the chosen source, and the one it hands over to when it does.
    private func run(until waker: Waker) {
        let chooser = LocationSourceChooser(config: config, tuning: tuning, clock: clock, logger: logger,
                                            timeEvidence: timeEvidence, serviceMode: serviceMode)
        var (source, reason) = chooser.choose()
        while true {
            use(source, because: reason)
            guard case .handOver(let handover) = source.run(until: waker, feed: self) else { return }
            shared.withLock { $0.link = .connecting }
            source = handover.next
            reason = handover.reason
        }
    }

    private func use(_ source: any LocationSource, because reason: String?) {
        shared.withLock { s in
            s.source = source
            s.choice = reason
        }
        if let reason { logger.notice("location source: \(source.kind.name) (\(reason))") }
    }

    public func stop() {
        guard let current = running.withLock({ running -> Running? in
            defer { running = nil }
            return running
        }) else { return }
        if !current.thread.stop(timeout: tuning.stopTimeout) {
            let source = shared.withLock { $0.source }
            let what = source.map { "\($0.kind.name) at \($0.address)" } ?? "the location source"
            logger.warning("the location thread did not stop within \(tuning.stopTimeout) s (a connect to \(what) still pending); leaving it to end by itself")
        }
        // The last fix may not have had its tick yet: write it rather than lose it.
        tick()
        shared.withLock { $0.link = .idle }
        logger.info("location stream stopped")
    }

    public func liveness() -> Liveness {
        let status = status()
        let source = shared.withLock { $0.source }
        let now = clock.now()
        return status.liveness(now: now) { since in
            source?.quietLiveness(connectedSince: since, lastFixAge: status.lastFixAge, now: now) ?? .healthy
        }
    }

    public func status() -> LocationStatus {
        let now = clock.now()
        return shared.withLock { s in
            LocationStatus(address: s.source?.address, source: s.source?.kind, choice: s.choice, link: s.link,
                           lastFixTime: s.sampler.latest?.time.date,
                           lastFixAge: s.lastFixReceivedAt.map { max(0, now.timeIntervalSince($0)) },
                           recordsWritten: s.recordsWritten, lastRecordAt: s.lastRecordAt,
                           writeError: s.writeError)
        }
    }

    /// Fixes kept out by privacy zones, the stationary state and the accuracy ceiling, for
    /// `status` (the supervisor stores them).
    public func counters() -> [String: Int] {
        shared.withLock {
            [StreamCounter.privacySkipped: $0.privacySkipped, StreamCounter.privacyCoarsened: $0.privacyCoarsened,
             StreamCounter.stationaryThinned: $0.stationaryThinned, StreamCounter.tooCoarse: $0.tooCoarse]
        }
    }

    /// The source in use and why, for `status`.
    public func details() -> [String: String] {
        shared.withLock { s in
            guard let source = s.source else { return [:] }
            var details = [StreamCounter.locationSource: source.kind.rawValue]
            if let choice = s.choice { details[StreamCounter.locationSourceReason] = choice }
            // Whole metres: the agent state is rewritten only when this changes.
            if let accuracy = s.lastAccuracy { details[StreamCounter.lastAccuracy] = String(Int(accuracy.rounded())) }
            if let method = s.lastMethod { details[StreamCounter.lastMethod] = method.textForm }
            return details
        }
    }

    // MARK: LocationFeed: what the running source calls, on its own thread.

    func received(_ fix: LocationFix) -> Bool {
        let now = clock.now()
        let coarse = isTooCoarse(fix)
        let (first, leftStill) = shared.withLock { s -> (Bool, Bool) in
            let first = s.sampler.latest == nil
            s.sampler.offer(fix)
            s.lastFixReceivedAt = now
            s.lastAccuracy = fix.horizontalAccuracy
            s.lastMethod = fix.method
            let left = fix.source.repeatsWhileStill && !coarse && s.filter.observe(fix)
            return (first, left)
        }
        if !coarse { onFix?(fix.latitude, fix.longitude) }
        // The fix that ends a stationary stretch does not wait for the tick.
        if leftStill { tick() }
        return first
    }

    /// Coarser than `[location] max_accuracy` (0: none is); a fix that gives no accuracy
    /// is kept, as nothing says it is coarse.
    private func isTooCoarse(_ fix: LocationFix) -> Bool {
        guard config.maxAccuracy > 0, let accuracy = fix.horizontalAccuracy else { return false }
        return accuracy > Double(config.maxAccuracy)
    }

    var hasPendingFix: Bool { shared.withLock { $0.sampler.pending != nil } }

    func linkChanged(_ link: LocationLink) {
        shared.withLock { $0.link = link }
    }

    /// One sampling tick: write the latest fix if it is new. Runs on the source's thread
    /// (and once in stop()), one at a time.
    func tick() {
        writing.withLock { _ in writeLatest() }
    }

    private func writeLatest() {
        guard let fix = shared.withLock({ $0.sampler.pending }) else { return }
        let now = clock.now()
        guard !keptBackAsTooCoarse(fix), !thinned(fix), let written = applyZones(to: fix) else { return }
        do {
            let record = try LocationRecord.make(from: written, now: now, clockTrusted: clockTrust.isTrusted(now: now))
            try queue.enqueue(record)
            let recovered = shared.withLock { s -> Bool in
                s.sampler.markWritten(fix)
                s.filter.passed(fix)
                s.recordsWritten += 1
                s.lastRecordAt = now
                s.timeRejectionLogged = false
                defer { s.writeError = nil }
                return s.writeError != nil
            }
            if recovered { logger.notice("location records are written again") }
        } catch let rejected as LocationRecordError {
            let firstInStreak = shared.withLock { s -> Bool in
                s.sampler.markWritten(fix)
                s.filter.passed(fix)
                defer { s.timeRejectionLogged = true }
                return !s.timeRejectionLogged
            }
            if firstInStreak { logger.warning("\(rejected.description)") }
        } catch {
            // The fix stays pending: the next tick retries with the latest fix then.
            let firstInStreak = shared.withLock { s -> Bool in
                defer { s.writeError = "\(error)" }
                return s.writeError == nil
            }
            if firstInStreak { logger.error("cannot write a location record to the queue: \(error); retrying every \(config.interval) s") }
        }
    }

    /// True when the fix is coarser than the ceiling: it is then marked written and counted,
    /// and the first of a run is logged. Runs inside `writing`.
    private func keptBackAsTooCoarse(_ fix: LocationFix) -> Bool {
        let coarse = isTooCoarse(fix)
        let change = shared.withLock { s -> Bool? in
            defer { s.tooCoarseLogged = coarse }
            guard coarse else { return s.tooCoarseLogged ? false : nil }
            s.sampler.markWritten(fix)
            s.tooCoarse += 1
            return s.tooCoarseLogged ? nil : true
        }
        if change == true, let accuracy = fix.horizontalAccuracy {
            logger.notice("\(fix.source.name) gives only coarse fixes (\(Int(accuracy.rounded())) m, over max_accuracy \(config.maxAccuracy) m): they are not written")
        } else if change == false {
            logger.notice("\(fix.source.name) gives fixes within max_accuracy again: they are written")
        }
        return coarse
    }

    /// True when a receiver standing still need not write this fix (`StationaryFilter`):
    /// it is then marked written and counted. Runs inside `writing`.
    private func thinned(_ fix: LocationFix) -> Bool {
        guard fix.source.repeatsWhileStill else { return false }
        return shared.withLock { s -> Bool in
            guard s.filter.decide(fix) == .thin else { return false }
            s.sampler.markWritten(fix)
            s.stationaryThinned += 1
            return true
        }
    }

    /// The fix as it may be written, nil when it lies in a zone that skips (it is then
    /// marked written, so it is never offered again, and counted). Runs inside `writing`.
    private func applyZones(to fix: LocationFix) -> LocationFix? {
        let decision = zones.decide(latitude: fix.latitude, longitude: fix.longitude)
        let zone: PrivacyZone?
        switch decision {
        case .keep: zone = nil
        case .skip(let z), .coarsen(let z): zone = z
        }
        let (entered, left) = shared.withLock { s -> (String?, String?) in
            let before = s.inZone
            s.inZone = zone?.label
            return before == s.inZone ? (nil, nil) : (s.inZone, before)
        }
        // Where the person is must not reach the log either: only the zone's own label.
        if let left { logger.info("left privacy zone \(left): location records are written again") }
        if let entered, let zone {
            logger.info("in privacy zone \(entered): \(zone.action == .skip ? "fixes are not written" : "fixes are written coarsened to about 1 km")")
        }
        switch decision {
        case .keep:
            return fix
        case .skip:
            shared.withLock { s in
                s.sampler.markWritten(fix)
                s.filter.passed(fix)
                s.privacySkipped += 1
            }
            return nil
        case .coarsen:
            shared.withLock { $0.privacyCoarsened += 1 }
            // Only what places the fix no closer than the rounding: altitude, speed and
            // course would narrow it down again, and the accuracy says how coarse it is.
            return LocationFix(mode: fix.mode, time: fix.time,
                          latitude: PrivacyZones.coarsen(fix.latitude), longitude: PrivacyZones.coarsen(fix.longitude),
                          horizontalAccuracy: PrivacyZones.coarsen(accuracy: fix.horizontalAccuracy), satellitesUsed: fix.satellitesUsed, source: fix.source)
        }
    }
}
