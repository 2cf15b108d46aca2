import AgentCore
import Foundation
import Logging
import Platform
import Synchronization

/// Tells the coverage ledger each stream's state when it changes (docs/operations.md,
/// "Coverage"). The streams' supervisors report what they are doing whenever something
/// already happens to them (a start, a pause and its reason, sleep and wake, the
/// maintenance round's liveness check); only a change is written, so the ledger adds no
/// timer and no wake-up of its own.
final class CoverageRecorder: Sendable {
    private let ledger: CoverageLedger
    private let clock: any WallClock
    private let logger: Logger
    /// The state last entered per stream, so an unchanged one costs no database read.
    private let entered = Mutex<[StreamName: CoverageState]>([:])

    init(database: AgentDatabase, clock: any WallClock, logger: Logger) {
        ledger = database.coverage
        self.clock = clock
        self.logger = logger
    }

    /// At a start, before any stream reports: what the last process left open is closed,
    /// a kill or power cut becoming a `lost` span from the last moment known.
    func closeAfterStart() {
        entered.withLock { $0 = [:] }
        do {
            for span in try ledger.closeAfterStart(now: clock.now()) {
                logger.notice("coverage: \(span.stream.rawValue) lost from \(RFC3339.string(from: span.start)): the daemon ended without stopping (killed, crashed or a power cut)")
            }
        } catch {
            logger.warning("cannot close the coverage ledger's open spans: \(error); the next start tries again")
        }
    }

    /// `stream` is in `state` now: written when it differs from the last one entered.
    func enter(_ stream: StreamName, _ state: CoverageState) {
        let changed = entered.withLock { e -> Bool in
            defer { e[stream] = state }
            return e[stream] != state
        }
        guard changed else { return }
        do {
            try ledger.enter(stream, state, at: clock.now())
        } catch {
            // Forgotten, so the next report of this state tries the write again.
            entered.withLock { $0[stream] = nil }
            logger.warning("cannot write \(stream.rawValue)'s coverage (\(state.rawValue)) to the ledger: \(error)")
        }
    }

    /// A clean stop: every stream's span ends and a `stopped` one begins.
    func stopped(_ streams: [StreamName]) {
        for stream in streams { enter(stream, .stopped) }
    }
}
