import Foundation
import Logging
import Platform

/// Logs at most `burst` messages a minute, then counts the rest and says how many it
/// held back: a file full of garbage must not fill the journal.
struct RateLimitedLog {
    let logger: Logger
    var burst = 10
    var window: TimeInterval = 60
    private var windowStart: TimeInterval = -.infinity
    private var sent = 0
    private var suppressed = 0

    init(logger: Logger) {
        self.logger = logger
    }

    mutating func warning(_ message: @autoclosure () -> String, metadata: Logger.Metadata = [:]) {
        let now = Monotonic.now
        if now - windowStart >= window {
            if suppressed > 0 {
                logger.warning("\(suppressed) more bad lines were not logged in the last minute", metadata: metadata)
            }
            windowStart = now
            sent = 0
            suppressed = 0
        }
        if sent < burst {
            sent += 1
            logger.warning("\(message())", metadata: metadata)
        } else {
            suppressed += 1
        }
    }
}
