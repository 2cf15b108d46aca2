import AgentCore
import DBus
import Foundation
import Logging
import Platform

extension FixSource {
    /// Positions from GeoClue (Wi-Fi, a modem, its own GPS sources): its time is the
    /// system clock's.
    public static let geoclue = FixSource(rawValue: "geoclue", name: "GeoClue", timeIsIndependent: false)
}

/// GeoClue as a location source: GeoClue paces the fixes (its time and distance
/// thresholds), so each is written as it comes; nothing wakes between them (docs/laptop.md).
/// `GeoClueReader` keeps a session open.
struct GeoClueSource: LocationSource {
    private let bus: DBusBus
    private let settings: GeoClueSettings
    private let pacing: GeoCluePacing
    private let retry: Backoff
    /// No fix at all this long after GeoClue started makes the stream unhealthy.
    private let firstFixLimit: TimeInterval
    private let handover: LocationHandover?
    private let clock: any WallClock
    private let logger: Logger

    /// - Parameters:
    ///   - actsAsItsOwnAgent: as the system service, with no desktop to authorize it.
    ///   - handover: the source to move to once it can serve (source `auto`).
    init(config: LocationConfig, tuning: LocationTuning, actsAsItsOwnAgent: Bool, handover: LocationHandover?,
         clock: any WallClock, logger: Logger) {
        bus = tuning.geoClueBus
        settings = GeoClueSettings(accuracy: config.accuracyLevel, timeThreshold: UInt32(config.interval),
                                   distanceThreshold: UInt32(config.distanceThreshold),
                                   actsAsItsOwnAgent: actsAsItsOwnAgent, startTimeout: tuning.geoClueStartTimeout)
        pacing = GeoCluePacing(config: config, tuning: tuning)
        retry = tuning.geoClueRetry
        firstFixLimit = tuning.geoClueFirstFixLimit
        self.handover = handover
        self.clock = clock
        self.logger = logger
    }

    var kind: FixSource { .geoclue }
    var address: String { bus.description }

    func run(until waker: Waker, feed: any LocationFeed) -> LocationSourceEnd {
        let logger = self.logger
        return GeoClueReader(bus: bus, settings: settings, pacing: pacing, retry: retry, handover: handover, clock: clock, logger: logger,
                             onFix: { fix in
                                 // On the session's bus thread: GeoClue has paced the fix
                                 // already (its time threshold is the interval), so it is
                                 // written now.
                                 if feed.received(fix.fix) {
                                     logger.info("first fix from GeoClue\(fix.accuracy.map { " (accuracy \(Int($0.rounded())) m)" } ?? "") at \(fix.time)")
                                 }
                                 feed.tick()
                             },
                             onLink: { feed.linkChanged($0) }).run(until: waker)
    }

    /// GeoClue sends a fix only when the device moves (or its first): a stationary laptop
    /// rightly gets none for hours, so only none at all since it started counts.
    func quietLiveness(connectedSince: Date, lastFixAge: TimeInterval?, now: Date) -> Liveness {
        let quiet = now.timeIntervalSince(connectedSince)
        guard lastFixAge == nil, quiet > firstFixLimit else { return .healthy }
        return .unhealthy(reason: "GeoClue has given no position in \(Int(quiet)) s since it started: "
            + "check that Wi-Fi is on (GeoClue locates by the networks in reach) or that its sources are "
            + "enabled in /etc/geoclue/geoclue.conf (docs/laptop.md)")
    }
}
