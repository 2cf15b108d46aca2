import AgentCore
import Foundation
import Logging
import Platform

/// The location thread's loop: connect to gpsd, pass on every report, run the sampling
/// ticks, and when gpsd is absent or goes away, reconnect with backoff. It logs once per
/// outage (a warning when it starts, a notice when it ends) and keeps the rest at debug
/// level, so a gpsd that is down for a day does not fill the journal.
///
/// The thread does not wake for each of gpsd's reports (one a second): it sleeps until the
/// next tick (see `SamplingPace`), then reads what gpsd sent meanwhile and runs `onTick`.
/// While it sleeps it still watches the connection for a close, so a gpsd that goes away
/// is noticed at once, not at the next tick. Only from a (re)connect to the first tick
/// after it does it read each report as it comes: a connection that fails (garbage, a
/// close at once) is then done with before the tick, which samples the fix of the
/// connection that works, and the outage's end is logged when gpsd talks. A tick with
/// nothing to write is not woken for: when gpsd sent nothing for a whole interval (a
/// receiver that is unplugged) and no fix waits, the thread sleeps until gpsd talks again,
/// and without gpsd it wakes only to reconnect, so an idle stream costs no wake-ups.
final class GPSDReader: Sendable {
    private let host: String
    private let port: Int
    private let backoff: Backoff
    private let clock: any WallClock
    private let logger: Logger
    private let interval: TimeInterval
    private let maxReadGap: TimeInterval
    private let onReport: @Sendable (GPSDReport) -> Void
    private let onTick: @Sendable () -> Void
    private let hasPending: @Sendable () -> Bool
    private let onLink: @Sendable (LocationLink) -> Void

    /// - Parameters:
    ///   - interval: seconds between sampling ticks (`onTick`), connected or not.
    ///   - maxReadGap: the longest the socket goes unread while connected.
    ///   - hasPending: whether a fix waits for a tick to be written.
    init(host: String, port: Int, backoff: Backoff, clock: any WallClock, logger: Logger,
         interval: TimeInterval, maxReadGap: TimeInterval,
         onReport: @escaping @Sendable (GPSDReport) -> Void,
         onTick: @escaping @Sendable () -> Void,
         hasPending: @escaping @Sendable () -> Bool,
         onLink: @escaping @Sendable (LocationLink) -> Void) {
        self.host = host
        self.port = port
        self.backoff = backoff
        self.clock = clock
        self.logger = logger
        self.interval = interval
        self.maxReadGap = maxReadGap
        self.onReport = onReport
        self.onTick = onTick
        self.hasPending = hasPending
        self.onLink = onLink
    }

    var endpoint: String { "\(host):\(port)" }

    /// Runs until `waker` is woken. Blocks; call it on the reader's own thread.
    func run(until waker: Waker) {
        // A reader that outlives stop() (stuck in a remote connect) must not overwrite
        // the stopped state.
        let onLink = { (state: LocationLink) in
            if !waker.isWoken { self.onLink(state) }
        }
        var failures = RetryCounter()
        var outageStart: Date?
        var everConnected = false
        var pace = SamplingPace(interval: interval, maxReadGap: maxReadGap, now: Monotonic.now)

        while !waker.isWoken {
            let error: GPSDError
            do {
                let client = try GPSDClient(host: host, port: port)
                defer { client.close() }
                onLink(.connected(since: clock.now()))
                logger.debug("connected to gpsd at \(endpoint), watching for reports")
                do {
                    try pump(client, waker: waker, pace: &pace) {
                        // The outage ends when gpsd actually talks, not on a bare TCP
                        // connect, so a listener that accepts and drops at once stays one
                        // logged outage with growing delays.
                        failures.succeeded()
                        if let start = outageStart {
                            let seconds = Int(clock.now().timeIntervalSince(start).rounded())
                            logger.notice("gpsd at \(endpoint) is back after \(seconds) s; location capture resumes")
                            outageStart = nil
                        } else if !everConnected {
                            logger.info("connected to gpsd at \(endpoint)")
                        }
                        everConnected = true
                    }
                    return
                } catch let lost {
                    error = lost
                }
            } catch let failed {
                error = failed
            }

            let now = clock.now()
            if outageStart == nil {
                outageStart = now
                logger.warning("\(error.description)")
            } else {
                logger.debug("still no gpsd: \(error.description)")
            }
            onLink(.unreachable(reason: error.description, since: outageStart ?? now))
            if sleep(failures.failed(backoff: backoff), waker: waker, pace: &pace) == .woken { return }
        }
    }

    /// Sleeps `seconds` without gpsd, running the ticks that fall due meanwhile (a fix that
    /// came just before gpsd went away is still written at its tick).
    private func sleep(_ seconds: TimeInterval, waker: Waker, pace: inout SamplingPace) -> Waker.Outcome {
        let end = Monotonic.now + seconds
        while true {
            let now = Monotonic.now
            if pace.takeTick(now: now) { onTick() }
            guard end > now else { return .timedOut }
            // A tick only for a fix that came before gpsd went away; none after it.
            let timeout = hasPending() ? min(end - now, pace.untilTick(now: now)) : end - now
            if waker.wait(for: nil, timeout: timeout) == .woken { return .woken }
        }
    }

    /// Reads reports at each tick (and every `maxReadGap`) until woken (returns) or the
    /// connection ends (throws, after passing on every report that came before the end).
    private func pump(_ client: GPSDClient, waker: Waker, pace: inout SamplingPace,
                      onFirstLine: () -> Void) throws(GPSDError) {
        var heardFrom = false
        var fresh = true
        while true {
            // The first line ends an outage before any report of it is passed on, so the
            // log tells of the recovery before the records that follow it.
            let lines = try drainAll(client, waker: waker) { report in
                if !heardFrom {
                    heardFrom = true
                    onFirstLine()
                }
                onReport(report)
            }
            if lines > 0 && !heardFrom {
                heardFrom = true
                onFirstLine()
            }
            let now = Monotonic.now
            pace.didRead(now: now)
            if pace.takeTick(now: now) {
                onTick()
                fresh = false
            }
            let wait = pace.untilReadOrTick(now: Monotonic.now)
            // Silent for a whole interval with no fix to write: no tick would do anything,
            // so sleep until gpsd talks (or closes).
            let silent = !fresh && lines == 0 && !hasPending()
            let outcome = fresh || silent
                ? waker.wait(for: client.fileDescriptor, timeout: silent ? nil : wait)
                : waker.wait(forCloseOf: client.fileDescriptor, timeout: wait)
            if outcome == .woken {
                // What gpsd sent since the last read, so that stop() writes the latest fix.
                _ = try? client.drain(onReport)
                return
            }
        }
    }

    /// Reads everything buffered on the socket (one drain is bounded, so a few may be
    /// needed after a long sleep), stopping early when woken.
    private func drainAll(_ client: GPSDClient, waker: Waker, handle: (GPSDReport) -> Void) throws(GPSDError) -> Int {
        var total = 0
        while true {
            let lines = try client.drain(handle)
            total += lines
            guard lines == GPSDClient.maxLinesPerDrain, !waker.isWoken else { return total }
        }
    }
}
