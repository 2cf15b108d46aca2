import AgentCore
import DBus
import Foundation
import Logging
import Platform

/// The location thread's loop on GeoClue: open a session, sleep until it ends (GeoClue
/// gone, the bus lost) or the thread is stopped, and open another with backoff. Fixes
/// arrive on the session's bus thread, not here. With a `handover` (source `auto`) it
/// also asks, every `handover.checkEvery`, whether that source can serve now (gpsd has a
/// receiver), and returns to hand over when it can. Logs once per outage, like the gpsd
/// reader.
final class GeoClueReader: Sendable {
    private let bus: DBusBus
    private let settings: GeoClueSettings
    private let retry: Backoff
    private let handover: LocationHandover?
    private let clock: any WallClock
    private let logger: Logger
    private let onFix: @Sendable (GeoClueFix) -> Void
    private let onLink: @Sendable (LocationLink) -> Void

    init(bus: DBusBus, settings: GeoClueSettings, retry: Backoff, handover: LocationHandover?,
         clock: any WallClock, logger: Logger,
         onFix: @escaping @Sendable (GeoClueFix) -> Void, onLink: @escaping @Sendable (LocationLink) -> Void) {
        self.bus = bus
        self.settings = settings
        self.retry = retry
        self.handover = handover
        self.clock = clock
        self.logger = logger
        self.onFix = onFix
        self.onLink = onLink
    }

    func run(until waker: Waker) -> LocationSourceEnd {
        var session: GeoClueSession?
        var failures = RetryCounter()
        var outageStart: Date?
        defer { session?.close() }
        while true {
            if session == nil {
                do {
                    session = try GeoClueSession(bus: bus, settings: settings, onFix: onFix)
                    if let start = outageStart {
                        logger.notice("GeoClue answers again after \(Int(clock.now().timeIntervalSince(start).rounded())) s; location capture resumes")
                    } else {
                        logger.info("location from GeoClue at accuracy \(settings.accuracy.rawValue)\(settings.actsAsItsOwnAgent ? ", as its own GeoClue agent" : ", authorized by the desktop's agent")")
                    }
                    failures.succeeded()
                    outageStart = nil
                    if !waker.isWoken { onLink(.connected(since: clock.now())) }
                } catch {
                    let now = clock.now()
                    if outageStart == nil {
                        outageStart = now
                        logger.warning("\(error.description)")
                    } else {
                        logger.debug("still no GeoClue: \(error.description)")
                    }
                    failures.failed()
                    if !waker.isWoken { onLink(.unreachable(reason: error.description, since: outageStart ?? now)) }
                }
            }
            let retryIn = session == nil ? failures.delay(from: retry) : nil
            let timeout = [retryIn, handover?.checkEvery].compactMap { $0 }.min()
            let outcome = waker.wait(for: session?.ended.fd, timeout: timeout)
            if outcome == .woken || waker.isWoken { return .stopped }
            if let current = session, current.ended.isWoken {
                current.close()
                session = nil
                let now = clock.now()
                outageStart = now
                logger.warning("\(GeoClueProblem.gone.description)")
                onLink(.unreachable(reason: GeoClueProblem.gone.description, since: now))
                failures = RetryCounter(failures: 1)
            }
            if let handover, handover.isReady() { return .handOver(handover) }
        }
    }
}
