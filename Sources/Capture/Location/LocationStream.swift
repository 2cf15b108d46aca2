import AgentCore
import DBus
import Foundation
import Logging
import Platform
import Synchronization

/// The `location` stream: gpsd or GeoClue fixes in, one record per interval out, straight
/// to the queue. One thread (`ariata-location`) chooses the source (`[location] source`)
/// and runs it. On gpsd it talks to gpsd (blocking libgps calls stay off the daemon's
/// threads) and samples: it sleeps until each tick, every `interval` seconds, reads the
/// reports gpsd sent meanwhile and writes the latest fix, so it wakes once per interval
/// rather than once per report (see `SamplingPace`). On GeoClue, GeoClue paces the fixes
/// (its time and distance thresholds) and each is written as it comes (docs/laptop.md).
public final class LocationStream: CaptureStream {
    public let stream: StreamName = .location
    public let config: LocationConfig
    private let sink: any RecordSink
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
        var link: GPSDLinkState = .idle
        var lastFixReceivedAt: Date?
        var recordsWritten = 0
        var lastRecordAt: Date?
        var writeError: String?
        var timeRejectionLogged = false
        /// Fixes inside a privacy zone: not written, or written coarsened.
        var privacySkipped = 0
        var privacyCoarsened = 0
        /// The zone the last fix lay in, so entering and leaving are logged once each.
        var inZone: String?
        /// The source in use, and why (source `auto`).
        var source: FixSource?
        var choice: String?
    }

    /// What exists only between start() and stop().
    private struct Running {
        let thread: NamedThread
    }

    private let shared = Mutex(Shared())
    private let running = Mutex<Running?>(nil)

    /// - Parameters:
    ///   - clockTrust: while the system clock cannot be believed, fix times are not
    ///     compared with it.
    ///   - timeEvidence: told the time of every 3D fix (ClockCorrection corrects held
    ///     records from it before NTP answers).
    public init(config: LocationConfig, sink: any RecordSink, clock: any WallClock = SystemClock(),
                logger: Logger, tuning: LocationTuning = LocationTuning(),
                clockTrust: ClockTrust = .live(trustSystemClock: false), timeEvidence: TimeEvidence = .shared,
                serviceMode: ServiceMode = .current()) {
        self.serviceMode = serviceMode
        self.config = config
        self.sink = sink
        self.clock = clock
        self.logger = logger
        self.tuning = tuning
        self.clockTrust = clockTrust
        self.timeEvidence = timeEvidence
        zones = PrivacyZones(config.exclude)
    }

    /// A stream dropped without stop() must not leave its reader thread behind.
    deinit { stop() }

    public var endpoint: String { "\(config.gpsdHost):\(config.gpsdPort)" }
    private let serviceMode: ServiceMode

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

    /// The location thread: the configured source, or for `auto` gpsd when it has a
    /// receiver and GeoClue until one appears.
    private func run(until waker: Waker) {
        switch config.source {
        case .gpsd:
            use(.gpsd, because: nil)
            makeGPSDReader().run(until: waker)
        case .geoclue:
            use(.geoclue, because: nil)
            _ = makeGeoClueReader(probing: false).run(until: waker)
        case .auto:
            if gpsdHasReceiver() {
                use(.gpsd, because: "gpsd at \(endpoint) has a receiver")
                return makeGPSDReader().run(until: waker)
            }
            use(.geoclue, because: "gpsd at \(endpoint) has no receiver")
            guard makeGeoClueReader(probing: true).run(until: waker) == .gpsdAppeared else { return }
            use(.gpsd, because: "a receiver appeared at gpsd \(endpoint)")
            shared.withLock { $0.link = .connecting }
            makeGPSDReader().run(until: waker)
        }
    }

    private func use(_ source: FixSource, because reason: String?) {
        shared.withLock { s in
            s.source = source
            s.choice = reason
        }
        if let reason { logger.notice("location source: \(source == .gpsd ? "gpsd" : "GeoClue") (\(reason))") }
    }

    /// Whether gpsd answers and lists at least one receiver: a socket-activated gpsd with
    /// nothing plugged in (a laptop) answers with none.
    private func gpsdHasReceiver() -> Bool {
        ((try? GPSDClient.receiverCount(host: config.gpsdHost, port: config.gpsdPort, timeout: tuning.gpsdProbeTimeout)) ?? nil ?? 0) > 0
    }

    private func makeGPSDReader() -> GPSDReader {
        GPSDReader(
            host: config.gpsdHost, port: config.gpsdPort,
            backoff: tuning.reconnect,
            clock: clock, logger: logger,
            interval: TimeInterval(config.interval), maxReadGap: tuning.maxReadGap,
            onReport: { [weak self] report in self?.received(report) },
            onTick: { [weak self] in self?.writePendingFix() },
            hasPending: { [weak self] in self?.shared.withLock { $0.sampler.pending != nil } ?? false },
            onLink: { [weak self] state in self?.shared.withLock { $0.link = state } })
    }

    private func makeGeoClueReader(probing: Bool) -> GeoClueReader {
        let settings = GeoClueSettings(accuracy: config.accuracyLevel, timeThreshold: UInt32(config.interval),
                                       distanceThreshold: UInt32(config.distanceThreshold),
                                       actsAsItsOwnAgent: serviceMode == .system, startTimeout: tuning.geoClueStartTimeout)
        let probe: (@Sendable () -> Bool)?
        if probing {
            probe = { @Sendable [weak self] in self?.gpsdHasReceiver() ?? false }
        } else {
            probe = nil
        }
        return GeoClueReader(bus: tuning.geoClueBus, settings: settings, retry: tuning.geoClueRetry, probeGPSD: probe,
                             probeInterval: tuning.gpsdProbeInterval, clock: clock, logger: logger,
                             onFix: { [weak self] fix in self?.received(fix) },
                             onLink: { [weak self] state in self?.shared.withLock { $0.link = state } })
    }

    public func stop() {
        guard let current = running.withLock({ running -> Running? in
            defer { running = nil }
            return running
        }) else { return }
        if !current.thread.stop(timeout: tuning.stopTimeout) {
            logger.warning("the gpsd reader did not stop within \(tuning.stopTimeout) s (a connect to \(endpoint) still pending); leaving it to end by itself")
        }
        // The last fix may not have had its tick yet: write it rather than lose it.
        writePendingFix()
        shared.withLock { $0.link = .idle }
        logger.info("location stream stopped")
    }

    public func liveness() -> Liveness {
        let status = status()
        let staleAfter = status.source == .geoclue ? tuning.geoClueFirstFixLimit : tuning.staleFixLimit(interval: config.interval)
        return status.health(now: clock.now(), staleFixAfter: staleAfter)
    }

    public func status() -> LocationStatus {
        let now = clock.now()
        return shared.withLock { s in
            LocationStatus(endpoint: endpoint, source: s.source, choice: s.choice, link: s.link,
                           lastFixTime: s.sampler.latest?.time.date,
                           lastFixAge: s.lastFixReceivedAt.map { max(0, now.timeIntervalSince($0)) },
                           recordsWritten: s.recordsWritten, lastRecordAt: s.lastRecordAt,
                           writeError: s.writeError)
        }
    }

    /// Fixes kept out by privacy zones, for `status` (the supervisor stores them).
    public func counters() -> [String: Int] {
        shared.withLock { [StreamCounter.privacySkipped: $0.privacySkipped, StreamCounter.privacyCoarsened: $0.privacyCoarsened] }
    }

    /// A GeoClue fix, on the session's bus thread: GeoClue has paced it already (its time
    /// threshold is the interval), so it is written now.
    private func received(_ fix: GeoClueFix) {
        let first = shared.withLock { s -> Bool in
            defer {
                s.sampler.offer(fix.fix)
                s.lastFixReceivedAt = clock.now()
            }
            return s.sampler.latest == nil
        }
        if first {
            logger.info("first fix from GeoClue\(fix.accuracy.map { " (accuracy \(Int($0.rounded())) m)" } ?? "") at \(fix.time)")
        }
        writePendingFix()
    }

    /// The source in use and why, for `status`.
    public func details() -> [String: String] {
        shared.withLock { s in
            guard let source = s.source else { return [:] }
            var details = [StreamCounter.locationSource: source.rawValue]
            if let choice = s.choice { details[StreamCounter.locationSourceReason] = choice }
            return details
        }
    }

    private func received(_ report: GPSDReport) {
        guard case .position(let fix?) = report else { return }
        let now = clock.now()
        // A 3D fix carries the satellites' time: evidence of the true time on this boot.
        if fix.mode >= 3, let boot = BootClock.now() {
            timeEvidence.record(trueTime: fix.time.date, at: boot, source: "gpsd 3D fix")
        }
        let first = shared.withLock { s -> Bool in
            defer {
                s.sampler.offer(fix)
                s.lastFixReceivedAt = now
            }
            return s.sampler.latest == nil
        }
        if first {
            logger.info("first fix from gpsd: \(fix.mode)D at \(fix.time)")
        }
    }

    /// One sampling tick: write the latest fix if it is new. Runs on the location thread
    /// (and once in stop()), one at a time.
    private func writePendingFix() {
        writing.withLock { _ in writeLatest() }
    }

    private func writeLatest() {
        guard let fix = shared.withLock({ $0.sampler.pending }) else { return }
        let now = clock.now()
        guard let written = applyZones(to: fix) else { return }
        do {
            let record = try LocationRecord.make(from: written, now: now, clockTrusted: clockTrust.isTrusted(now: now))
            try sink.enqueue(record)
            let recovered = shared.withLock { s -> Bool in
                s.sampler.markWritten(fix)
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

    /// The fix as it may be written, nil when it lies in a zone that skips (it is then
    /// marked written, so it is never offered again, and counted). Runs inside `writing`.
    private func applyZones(to fix: GPSFix) -> GPSFix? {
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
                s.privacySkipped += 1
            }
            return nil
        case .coarsen:
            shared.withLock { $0.privacyCoarsened += 1 }
            // Only what places the fix no closer than the rounding: altitude, speed and
            // course would narrow it down again, and the accuracy says how coarse it is.
            return GPSFix(mode: fix.mode, time: fix.time,
                          latitude: PrivacyZones.coarsen(fix.latitude), longitude: PrivacyZones.coarsen(fix.longitude),
                          horizontalAccuracy: 1_000, satellitesUsed: fix.satellitesUsed, source: fix.source)
        }
    }
}
