import Foundation
import Platform
import Synchronization

/// The true time learnt from something other than a clock the agent believes now: a gpsd
/// 3D fix, whose time comes from the satellites, or the system clock while NTP kept it.
/// Tied to the boot clock at the moment it was received, it tells the true time of every
/// instant of this boot, so held records can be corrected before NTP ever answers (a
/// board with a GPS and no network).
///
/// One per process: the location stream and ClockCorrection tell it, ClockCorrection and
/// the capture-time checks ask. ClockCorrection keeps it in the database too
/// (`TimeEvidenceStore`), so later processes of the same boot start with it.
public final class TimeEvidence: Sendable {
    public static let shared = TimeEvidence()

    public struct Sample: Sendable, Equatable {
        public var trueTime: Date
        public var boot: BootInstant
        public var source: String

        public init(trueTime: Date, boot: BootInstant, source: String) {
            self.trueTime = trueTime
            self.boot = boot
            self.source = source
        }

        /// Wall time of boot-clock instant t is t + offset, for every t of this boot.
        public var offset: Double { trueTime.timeIntervalSince1970 - boot.seconds }

        /// The true time of `instant`, an instant of the same boot.
        public func trueTime(of instant: BootInstant) -> Date? {
            instant.bootID == boot.bootID ? Date(timeIntervalSince1970: instant.seconds + offset) : nil
        }
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

    /// Takes `sample` (read back from the database) unless this process already knows
    /// something of the same boot, which is as new or newer.
    public func adopt(_ sample: Sample) {
        guard sample.trueTime >= CaptureTimeRule.earliest else { return }
        latest.withLock { current in
            if current?.boot.bootID != sample.boot.bootID { current = sample }
        }
    }

    /// The latest evidence from boot `bootID`, when there is any.
    public func latest(bootID: String) -> Sample? {
        latest.withLock { sample in sample.flatMap { $0.boot.bootID == bootID ? $0 : nil } }
    }

    /// The true time now, from this boot's evidence; nil without any (or without a boot clock).
    public func trueNow(bootClock: () -> BootInstant? = BootClock.now) -> Date? {
        guard let now = bootClock() else { return nil }
        return latest(bootID: now.bootID)?.trueTime(of: now)
    }
}
