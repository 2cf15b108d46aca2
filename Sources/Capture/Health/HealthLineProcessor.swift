import AgentCore
import Foundation
import Logging
import Platform

/// Parse, normalise, count, log: one line in, the records it makes out. Shared by every
/// source kind so bad input is treated the same wherever it comes from.
struct HealthLineProcessor {
    var parser: any HealthLineParser
    let normaliser = HealthNormaliser()
    let sourceName: String
    let counters: HealthSourceCounters
    var log: RateLimitedLog
    let clockTrust: ClockTrust
    /// The last answer of `clockTrust` and when (uptime) it was asked: it is a kernel call,
    /// and a backlog is read at thousands of lines a second.
    private var trustChecked: (at: TimeInterval, trusted: Bool)?
    /// The metrics the server enabled (nil: all); samples of others are counted, not captured.
    let serverMetrics: Set<String>?
    private var toldServerSkip = false

    init(format: HealthLineFormat, sourceName: String, counters: HealthSourceCounters, logger: Logger,
         clockTrust: ClockTrust = .live(trustSystemClock: false), serverMetrics: Set<String>? = nil) {
        self.serverMetrics = serverMetrics
        parser = HealthLineParsers.make(format)
        self.sourceName = sourceName
        self.counters = counters
        log = RateLimitedLog(logger: logger)
        self.clockTrust = clockTrust
    }

    private mutating func clockTrusted(now: Date) -> Bool {
        if CaptureTimeRule.clockLooksUnset(now) { return false }
        let uptime = Monotonic.now
        if let checked = trustChecked, uptime - checked.at < 1 { return checked.trusted }
        let trusted = clockTrust.isTrusted(now: now)
        trustChecked = (uptime, trusted)
        return trusted
    }

    /// `place` names the line in logs (`/var/log/hr.jsonl:42`). Samples dated before
    /// `notBefore` (a backfill's window) are skipped and counted as such.
    mutating func process(_ line: Substring, place: @autoclosure () -> String, now: Date,
                          notBefore: Date? = nil, into records: inout [NewRecord]) {
        let outcome = parser.parse(line)
        var malformed = 0, rejected = 0, old = 0, serverSkipped = 0
        defer {
            counters.update {
                $0.linesRead += 1
                $0.malformedLines += malformed
                $0.rejectedSamples += rejected
                $0.skippedOld += old
                $0.serverSkippedSamples += serverSkipped
            }
        }
        switch outcome {
        case .ignored:
            return
        case .malformed(let reason):
            malformed = 1
            log.warning("skipping malformed line at \(place()): \(reason)")
        case .samples(let samples):
            let trusted = clockTrusted(now: now)
            let trueNow = clockTrust.trueNow(now: now, trusted: trusted)
            for raw in samples {
                switch normaliser.normalise(raw, now: now, clockTrusted: trusted, trueNow: trueNow) {
                case .rejected(let reason):
                    rejected += 1
                    log.warning("skipping sample at \(place()): \(reason)")
                case .accepted(let sample):
                    if let serverMetrics, !serverMetrics.contains(sample.metric.rawValue) {
                        serverSkipped += 1
                        if !toldServerSkip {
                            toldServerSkip = true
                            log.logger.notice("\(sourceName): \(sample.metric.rawValue) samples are not captured: the server enables only \(serverMetrics.sorted().joined(separator: ", ")) (its enabled_metrics); they are counted in 'ariata-agent status'")
                        }
                        continue
                    }
                    if let notBefore, sample.timestamp < notBefore {
                        old += 1
                        continue
                    }
                    do {
                        var record = try normaliser.record(sample, source: sourceName)
                        if raw.timestamp == nil, !trusted {
                            // Dated from a clock that cannot be believed: held until corrected.
                            record.provisional = ProvisionalTime(capturedAt: now, now: now, boot: BootClock.now())
                        }
                        records.append(record)
                    } catch {
                        rejected += 1
                        log.warning("skipping sample at \(place()): cannot encode it: \(error)")
                    }
                }
            }
        }
    }

    /// A line too long to be a sample (no newline in 64 KiB): counted and skipped.
    mutating func overlong(place: @autoclosure () -> String) {
        counters.update {
            $0.linesRead += 1
            $0.malformedLines += 1
        }
        log.warning("skipping line at \(place()): longer than \(LineBuffer.maxLineBytes) bytes")
    }
}
