import Foundation
import Synchronization

/// The true time learnt from something other than the system clock: a gpsd 3D fix, whose
/// time comes from the satellites. Tied to the boot clock at the moment it was received,
/// it tells the true time of every instant of this boot, so held records can be corrected
/// before NTP ever answers (a board with a GPS and no network).
///
/// One per process: the location stream tells it, the daemon's ClockCorrection asks.
public final class TimeEvidence: Sendable {
    public static let shared = TimeEvidence()

    public struct Sample: Sendable, Equatable {
        public var trueTime: Date
        public var boot: BootInstant
        public var source: String

        /// Wall time of boot-clock instant t is t + offset, for every t of this boot.
        public var offset: Double { trueTime.timeIntervalSince1970 - boot.seconds }
    }

    private let latest = Mutex<Sample?>(nil)

    public init() {}

    /// `trueTime` is the time of an event that the boot clock saw at `boot`. A fix is
    /// received a fraction of a second after its time, so times worked out from it are
    /// that much early (well under a second with gpsd).
    public func record(trueTime: Date, at boot: BootInstant, source: String) {
        guard trueTime >= CaptureTimeRule.earliest else { return }
        latest.withLock { $0 = Sample(trueTime: trueTime, boot: boot, source: source) }
    }

    /// The latest evidence from boot `bootID`, when there is any.
    public func latest(bootID: String) -> Sample? {
        latest.withLock { sample in sample.flatMap { $0.boot.bootID == bootID ? $0 : nil } }
    }
}
