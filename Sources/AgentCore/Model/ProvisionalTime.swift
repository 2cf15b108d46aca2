import Foundation
import Platform

/// Where on the boot clock a record was captured while the system clock could not be
/// believed. The record's times are provisional: the queue holds it (the uploader never
/// sees it) until the clock is right, and then its true time is worked out from this.
public struct ProvisionalTime: Sendable, Equatable {
    /// The boot the record was captured in ("unknown" when /proc could not tell).
    public var bootID: String
    /// CLOCK_BOOTTIME seconds at the record's capture time (its `captured_at`).
    public var bootTime: Double

    public static let unknownBoot = "unknown"

    public init(bootID: String, bootTime: Double) {
        self.bootID = bootID
        self.bootTime = bootTime
    }

    /// The record captured at wall time `capturedAt`, when the boot clock read `boot` at
    /// wall time `now`.
    public init(capturedAt: Date, now: Date, boot: BootInstant?) {
        if let boot {
            self.init(bootID: boot.bootID, bootTime: boot.seconds - now.timeIntervalSince(capturedAt))
        } else {
            self.init(bootID: Self.unknownBoot, bootTime: 0)
        }
    }
}
