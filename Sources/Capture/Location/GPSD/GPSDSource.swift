import AgentCore
import Foundation
import Logging
import Platform

extension FixSource {
    /// Fixes from a receiver through gpsd: the satellites' time, which stands without the
    /// system clock.
    public static let gpsd = FixSource(rawValue: "gpsd", name: "gpsd", timeIsIndependent: true, repeatsWhileStill: true)
}

/// gpsd as a location source: it sends a report a second, and the stream samples one fix
/// per interval. `GPSDReader` runs the connection and the ticks (see `SamplingPace`), so
/// the thread wakes once per interval rather than once per report.
struct GPSDSource: LocationSource {
    private let host: String
    private let port: Int
    private let interval: Int
    private let tuning: LocationTuning
    private let clock: any WallClock
    private let logger: Logger
    private let timeEvidence: TimeEvidence

    init(config: LocationConfig, tuning: LocationTuning, clock: any WallClock, logger: Logger, timeEvidence: TimeEvidence) {
        host = config.gpsdHost
        port = config.gpsdPort
        interval = config.interval
        self.tuning = tuning
        self.clock = clock
        self.logger = logger
        self.timeEvidence = timeEvidence
    }

    var kind: FixSource { .gpsd }
    var address: String { "\(host):\(port)" }

    func run(until waker: Waker, feed: any LocationFeed) -> LocationSourceEnd {
        GPSDReader(
            host: host, port: port,
            backoff: tuning.reconnect,
            clock: clock, logger: logger,
            interval: TimeInterval(interval), maxReadGap: tuning.maxReadGap,
            onReport: { report in received(report, feed: feed) },
            onTick: { feed.tick() },
            hasPending: { feed.hasPendingFix },
            onLink: { feed.linkChanged($0) }
        ).run(until: waker)
        return .stopped
    }

    private func received(_ report: GPSDReport, feed: any LocationFeed) {
        guard case .position(let fix?) = report else { return }
        // A 3D fix carries the satellites' time: evidence of the true time on this boot.
        if let mode = fix.mode, mode >= 3, let boot = BootClock.now() {
            timeEvidence.record(trueTime: fix.time.date, at: boot, source: "gpsd 3D fix")
        }
        if feed.received(fix) {
            logger.info("first fix from gpsd: \(fix.mode ?? 2)D at \(fix.time)")
        }
    }

    /// A receiver without a fix for longer than the limit (three sampling intervals, at
    /// least two minutes, so a cold start does not count) makes the stream unhealthy: no
    /// fix means no records, and the user should hear why the stream went quiet.
    func quietLiveness(connectedSince: Date, lastFixAge: TimeInterval?, now: Date) -> Liveness {
        let quietSince = lastFixAge.map { now.addingTimeInterval(-$0) } ?? connectedSince
        let quiet = now.timeIntervalSince(quietSince)
        guard quiet > tuning.staleFixLimit(interval: interval) else { return .healthy }
        let what = lastFixAge == nil ? "no fix since connecting" : "no fix"
        return .unhealthy(reason: "connected to gpsd at \(address) but \(what) for \(Int(quiet)) s; "
            + "check the receiver is attached and sees the sky (cgps or gpsmon show what gpsd gets)")
    }

    /// How many receivers gpsd has, nil when it does not answer within the probe's time.
    func receiverCount() -> Int? {
        (try? GPSDClient.receiverCount(host: host, port: port, timeout: tuning.gpsdProbeTimeout)) ?? nil
    }
}
