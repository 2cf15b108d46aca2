import AgentCore
import DBus
import Foundation
import Logging
import Platform
import Synchronization

/// The location thread's loop on GeoClue, in one of two ways (`GeoCluePacing`):
///
/// - held: open a session, sleep until it ends (GeoClue gone, the bus lost) or the thread
///   is stopped, and open another with backoff. Fixes arrive on the session's bus thread.
/// - per fix: every `fixInterval`, open a session, wait for its first fix (at most
///   `fixTimeout`), and close it, so GeoClue stops its sources between fixes.
///
/// With `geoclue_mode = "auto"` it moves between the two as the machine goes on battery
/// and back. With a `handover` (source `auto`) it also asks, every `handover.checkEvery`,
/// whether that source can serve now (gpsd has a receiver), and returns to hand over when
/// it can. Logs once per outage, like the gpsd reader.
final class GeoClueReader: Sendable {
    private let bus: DBusBus
    private let settings: GeoClueSettings
    private let pacing: GeoCluePacing
    private let retry: Backoff
    private let handover: LocationHandover?
    private let clock: any WallClock
    private let logger: Logger
    private let onFix: @Sendable (GeoClueFix) -> Void
    private let onLink: @Sendable (LocationLink) -> Void
    /// GeoClue's answering: when it last started to (nil: not now), and the failures since.
    private let outage = Mutex<(start: Date?, failures: RetryCounter, connected: Bool)>((nil, RetryCounter(), false))
    /// Per fix, the position last handed on. A new client's first fix comes whether the
    /// machine moved or not; one that did not move (by `distance_threshold`, or not at all
    /// with 0) is held back, as a held client gets no fix until the position changes.
    private let lastPerFixPosition = Mutex<(latitude: Double, longitude: Double)?>(nil)

    init(bus: DBusBus, settings: GeoClueSettings, pacing: GeoCluePacing, retry: Backoff, handover: LocationHandover?,
         clock: any WallClock, logger: Logger,
         onFix: @escaping @Sendable (GeoClueFix) -> Void, onLink: @escaping @Sendable (LocationLink) -> Void) {
        self.bus = bus
        self.settings = settings
        self.pacing = pacing
        self.retry = retry
        self.handover = handover
        self.clock = clock
        self.logger = logger
        self.onFix = onFix
        self.onLink = onLink
    }

    func run(until waker: Waker) -> LocationSourceEnd {
        var perFix = pacing.perFix()
        while true {
            let mode = "geoclue_mode \(pacing.mode.rawValue)" + (pacing.mode == .auto ? (perFix ? ", on battery" : ", on mains") : "")
            let how = perFix ? "a fix every \(Int(pacing.fixInterval)) s, GeoClue let go between them" : "a client held all along"
            logger.info("GeoClue: \(how) (\(mode))")
            if let end = perFix ? runPerFix(until: waker) : runHeld(until: waker) { return end }
            perFix.toggle()
        }
    }

    /// A session opened; nil when GeoClue does not answer (logged and told once per outage).
    private func open(_ waker: Waker, onFix: @escaping @Sendable (GeoClueFix) -> Void) -> GeoClueSession? {
        do {
            let session = try GeoClueSession(bus: bus, settings: settings, onFix: onFix)
            let (wasOut, newlyConnected) = outage.withLock { o -> (Date?, Bool) in
                defer { o = (nil, RetryCounter(), true) }
                return (o.start, !o.connected)
            }
            if let start = wasOut {
                logger.notice("GeoClue answers again after \(Int(clock.now().timeIntervalSince(start).rounded())) s; location capture resumes")
            } else if newlyConnected {
                logger.info("location from GeoClue at accuracy \(settings.accuracy.rawValue)\(settings.actsAsItsOwnAgent ? ", as its own GeoClue agent" : ", authorized by the desktop's agent")")
            }
            if newlyConnected && !waker.isWoken { onLink(.connected(since: clock.now())) }
            return session
        } catch {
            failed(error.description, waker: waker)
            return nil
        }
    }

    private func failed(_ reason: String, waker: Waker, gone: Bool = false) {
        let now = clock.now()
        let (start, first) = outage.withLock { o -> (Date, Bool) in
            let first = o.start == nil
            if first { o.start = now }
            o.connected = false
            if gone { o.failures = RetryCounter(failures: 1) } else { o.failures.failed() }
            return (o.start ?? now, first)
        }
        if first { logger.warning("\(reason)") } else { logger.debug("still no GeoClue: \(reason)") }
        if !waker.isWoken { onLink(.unreachable(reason: reason, since: start)) }
    }

    private var retryDelay: TimeInterval { outage.withLock { $0.failures.delay(from: retry) } }

    /// Held: returns the end, or nil when `auto` moves to per-fix (the machine went on battery).
    private func runHeld(until waker: Waker) -> LocationSourceEnd? {
        var session: GeoClueSession?
        defer { session?.close() }
        while true {
            if session == nil { session = open(waker, onFix: onFix) }
            let retryIn = session == nil ? retryDelay : nil
            let powerCheck = pacing.mode == .auto ? pacing.powerCheckEvery : nil
            let timeout = [retryIn, handover?.checkEvery, powerCheck].compactMap { $0 }.min()
            let outcome = waker.wait(for: session?.ended.fd, timeout: timeout)
            if outcome == .woken || waker.isWoken { return .stopped }
            if let current = session, current.ended.isWoken {
                current.close()
                session = nil
                failed(GeoClueProblem.gone.description, waker: waker, gone: true)
            }
            if let handover, handover.isReady() { return .handOver(handover) }
            if pacing.perFix() { return nil }
        }
    }

    private func moved(_ fix: GeoClueFix) -> Bool {
        lastPerFixPosition.withLock { last in
            if let last {
                let distance = Geodesy.distance(fromLatitude: last.latitude, longitude: last.longitude,
                                                toLatitude: fix.latitude, longitude: fix.longitude)
                if distance == 0 || distance < Double(settings.distanceThreshold) { return false }
            }
            last = (fix.latitude, fix.longitude)
            return true
        }
    }

    /// Per fix: returns the end, or nil when `auto` moves to held (the machine is on mains).
    private func runPerFix(until waker: Waker) -> LocationSourceEnd? {
        while true {
            let started = clock.now()
            var wait = pacing.fixInterval
            if let arrived = try? Waker() {
                let onFix = self.onFix
                if let session = open(waker, onFix: { [self] fix in
                    if moved(fix) {
                        onFix(fix)
                    } else {
                        logger.debug("GeoClue's fix is the same place as the last: not written again")
                    }
                    arrived.wake()
                }) {
                    // The session's end (GeoClue gone) is not waited on: the fix timeout
                    // ends the wait as surely, and the next fix opens a new session anyway.
                    let outcome = waker.wait(for: arrived.fd, timeout: pacing.fixTimeout)
                    session.close()
                    if outcome == .woken || waker.isWoken { return .stopped }
                } else {
                    wait = min(wait, retryDelay)
                }
            }
            // Sleep until the next fix is due, asking about gpsd and the power on the way.
            while true {
                let left = wait - clock.now().timeIntervalSince(started)
                if left <= 0 { break }
                let timeout = [left, handover?.checkEvery].compactMap { $0 }.min()
                if waker.wait(for: nil, timeout: timeout) == .woken { return .stopped }
                if let handover, handover.isReady() { return .handOver(handover) }
            }
            if !pacing.perFix() { return nil }
        }
    }
}
