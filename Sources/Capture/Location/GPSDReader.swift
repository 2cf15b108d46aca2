import AgentCore
import Foundation
import Logging

/// The reader thread's loop: connect to gpsd, pass on every report, and when gpsd is
/// absent or goes away, reconnect with backoff. It logs once per outage (a warning when it
/// starts, a notice when it ends) and keeps the rest at debug level, so a gpsd that is
/// down for a day does not fill the journal.
final class GPSDReader: Sendable {
    private let host: String
    private let port: Int
    private let backoff: Backoff
    private let clock: any WallClock
    private let logger: Logger
    private let onReport: @Sendable (GPSDReport) -> Void
    private let onLink: @Sendable (GPSDLinkState) -> Void

    init(host: String, port: Int, backoff: Backoff, clock: any WallClock, logger: Logger,
         onReport: @escaping @Sendable (GPSDReport) -> Void,
         onLink: @escaping @Sendable (GPSDLinkState) -> Void) {
        self.host = host
        self.port = port
        self.backoff = backoff
        self.clock = clock
        self.logger = logger
        self.onReport = onReport
        self.onLink = onLink
    }

    var endpoint: String { "\(host):\(port)" }

    /// Runs until `waker` is woken. Blocks; call it on the reader's own thread.
    func run(until waker: Waker) {
        // A reader that outlives stop() (stuck in a remote connect) must not overwrite
        // the stopped state.
        let onLink = { (state: GPSDLinkState) in
            if !waker.isWoken { self.onLink(state) }
        }
        var failures = 0
        var outageStart: Date?
        var everConnected = false

        while !waker.isWoken {
            let error: GPSDError
            do {
                let client = try GPSDClient(host: host, port: port)
                defer { client.close() }
                onLink(.connected(since: clock.now()))
                logger.debug("connected to gpsd at \(endpoint), watching for reports")
                do {
                    try pump(client, waker: waker) {
                        // The outage ends when gpsd actually talks, not on a bare TCP
                        // connect, so a listener that accepts and drops at once stays one
                        // logged outage with growing delays.
                        failures = 0
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
            failures += 1
            if waker.wait(for: nil, timeout: backoff.delay(afterFailures: failures)) == .woken { return }
        }
    }

    /// Reads reports until woken (returns) or the connection ends (throws).
    private func pump(_ client: GPSDClient, waker: Waker, onFirstLine: () -> Void) throws(GPSDError) {
        var heardFrom = false
        while true {
            // The first line ends an outage before any report of it is passed on, so the
            // log tells of the recovery before the records that follow it.
            let lines = try client.drain { report in
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
            if waker.wait(for: client.fileDescriptor, timeout: nil) == .woken { return }
        }
    }
}
