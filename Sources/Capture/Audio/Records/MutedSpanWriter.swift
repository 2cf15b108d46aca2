import AgentCore
import Foundation
import Logging
import Platform
import Synchronization

/// Writes a muted-span record (`MutedSpanRecord`) to the queue each time a span the quiet
/// hours or a muted place closed ends, while the server is a Virtues box: the gate's
/// observer (`MicrophoneGate.addObserver`). A span is written when it ends, so one open
/// when the daemon is killed is not written (a stop ends it: `close`). Spans timed from a
/// clock that cannot be believed are not written: their times would say nothing.
public final class MutedSpanWriter: Sendable {
    private let queue: any RecordSink
    private let clock: any WallClock
    private let clockTrust: ClockTrust
    private let logger: Logger
    private let enabled: Mutex<Bool>

    public init(queue: any RecordSink, clock: any WallClock = SystemClock(), clockTrust: ClockTrust,
                enabled: Bool, logger: Logger) {
        self.queue = queue
        self.clock = clock
        self.clockTrust = clockTrust
        self.logger = logger
        self.enabled = Mutex(enabled)
    }

    /// Whether spans are written (the server is a Virtues box); the older servers get none.
    public func setEnabled(_ on: Bool) { enabled.withLock { $0 = on } }

    /// The gate's observer.
    public func changed(from old: MicrophoneGate.State, to new: MicrophoneGate.State) {
        guard let reason = old.closedBy, reason.isMute else { return }
        write(from: old.since, to: new.since, reason: reason)
    }

    /// The daemon stops while a span is open: it is written up to now.
    public func close(_ state: MicrophoneGate.State?) {
        guard let state, let reason = state.closedBy, reason.isMute else { return }
        write(from: state.since, to: clock.now(), reason: reason)
    }

    private func write(from start: Date, to end: Date, reason: MicrophoneGate.Reason) {
        guard enabled.withLock({ $0 }), end > start, clockTrust.isTrusted(now: clock.now()) else { return }
        do {
            try queue.enqueue(try MutedSpanRecord.make(from: start, to: end, mutedBy: reason))
        } catch {
            logger.warning("cannot write the muted span's record to the queue: \(error); the box will not show this span",
                           metadata: ["muted_by": "\(reason.rawValue)", "timestamp_start": "\(RFC3339.string(from: start))"])
        }
    }
}
