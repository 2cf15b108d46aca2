import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A moment on this boot's own clock: the kernel's boot id and CLOCK_BOOTTIME, which
/// starts at 0 at boot, never jumps when the wall clock is set, and counts through
/// suspend. Two instants of the same boot are exactly that many seconds apart, whatever
/// the wall clock said at either.
public struct BootInstant: Sendable, Equatable {
    public var bootID: String
    public var seconds: Double

    public init(bootID: String, seconds: Double) {
        self.bootID = bootID
        self.seconds = seconds
    }
}

public enum BootClock {
    /// Where the kernel tells this boot's id (a new random UUID at every boot).
    public static let bootIDPath = "/proc/sys/kernel/random/boot_id"

    /// This boot's id; read once, since a process never outlives its boot.
    public static let bootID: String? = {
        guard let data = FileManager.default.contents(atPath: bootIDPath),
              let text = String(data: data, encoding: .utf8) else { return nil }
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty ? nil : id
    }()

    /// Now, on the boot clock; nil when it cannot be read (no /proc).
    public static func now() -> BootInstant? {
        guard let id = bootID, let seconds = Monotonic.bootSeconds else { return nil }
        return BootInstant(bootID: id, seconds: seconds)
    }
}
