import Foundation
import Platform

/// Decides whether a capture time read from the system clock can be believed now, and
/// when it cannot, stamps the capture on the boot clock instead so its true time can be
/// worked out once the clock is right.
///
/// The clock is believed when the kernel says it is synchronised (NTP), or when the user
/// said so with `[daemon] trust_system_clock = true` (a machine without NTP whose clock
/// is set by hand). A clock before 2000 is never believed.
///
/// While it is not believed, this boot's evidence of the true time (a gpsd 3D fix) may
/// still tell what time it really is: `trueNow` is what a capture's own time is checked
/// against.
public struct ClockTrust: Sendable {
    public let sync: any ClockSyncSource
    public let trustSystemClock: Bool
    public let evidence: TimeEvidence

    public init(sync: any ClockSyncSource, trustSystemClock: Bool, evidence: TimeEvidence = .shared) {
        self.sync = sync
        self.trustSystemClock = trustSystemClock
        self.evidence = evidence
    }

    /// The kernel's flag (or the test file named by `ARIATA_CLOCK_SYNC_FILE`).
    public static func live(trustSystemClock: Bool,
                            environment: [String: String] = ProcessInfo.processInfo.environment) -> ClockTrust {
        ClockTrust(sync: ClockSync.live(environment: environment), trustSystemClock: trustSystemClock)
    }

    /// The true time now: the clock reading `now` when it is believed (`trusted`), else what
    /// this boot's evidence says; nil when neither is known.
    public func trueNow(now: Date, trusted: Bool) -> Date? {
        trusted ? now : evidence.trueNow()
    }

    /// nil when the wall clock reading `now` can be believed; otherwise why not.
    public func distrust(now: Date) -> String? {
        if CaptureTimeRule.clockLooksUnset(now) {
            return "the system clock reads \(RFC3339.string(from: now)), before 2000: it has not been set yet"
        }
        if trustSystemClock { return nil }
        return sync.unsynchronisedReason()
    }

    public func isTrusted(now: Date) -> Bool { distrust(now: now) == nil }

    /// For a capture at wall time `capturedAt`: nil when the clock is believed, otherwise
    /// where it happened on the boot clock (the record is then held).
    public func provisional(capturedAt: Date, now: Date) -> ProvisionalTime? {
        guard !isTrusted(now: now) else { return nil }
        return ProvisionalTime(capturedAt: capturedAt, now: now, boot: BootClock.now())
    }
}
