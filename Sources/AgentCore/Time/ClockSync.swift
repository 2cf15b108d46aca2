import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Whether the system clock is synchronised to a true time source: the one question the
/// agent asks before it believes a capture time taken from the wall clock.
public protocol ClockSyncSource: Sendable {
    /// nil when synchronised; otherwise why the clock cannot be believed (for logs and status).
    func unsynchronisedReason() -> String?
}

public enum ClockSync {
    /// The environment variable that points at a file saying `synchronised` or
    /// `unsynchronised`. A **test hook**: the kernel's flag cannot be set without
    /// privileges (and libfaketime does not fake it), so the daemon tests drive it
    /// through a file. Used only when set; never set it on a real device.
    public static let testFileVariable = "ARIATA_CLOCK_SYNC_FILE"

    /// The kernel's flag, or the test file when `ARIATA_CLOCK_SYNC_FILE` is set.
    public static func live(environment: [String: String] = ProcessInfo.processInfo.environment) -> any ClockSyncSource {
        if let path = environment[testFileVariable], !path.isEmpty { return FileClockSync(path: path) }
        return KernelClockSync()
    }
}

/// The kernel's own view, the one `timedatectl` shows as NTPSynchronized: `ntp_adjtime(2)`
/// with modes 0 (read only, no privilege needed) and the STA_UNSYNC bit of `status`. NTP
/// daemons (systemd-timesyncd, chrony, ntpd) clear it when they discipline the clock; the
/// kernel sets it again when the estimated error grows past 16 s without them. A clock
/// restored from the last shutdown (fake-hwclock) or set by hand keeps it set.
public struct KernelClockSync: ClockSyncSource {
    public init() {}

    // sys/timex.h is not in Swift's Glibc module, so the call goes through dlsym with the
    // C layout of `struct timex`: `unsigned int modes`, four `long`s, then `int status`.
    private typealias NTPAdjtime = @convention(c) (UnsafeMutableRawPointer) -> Int32
    private static let staUnsync: Int32 = 0x0040
    /// Made by systemd-timesyncd once it has synchronised the clock (systemd 249 and later).
    static let timesyncdFlag = "/run/systemd/timesync/synchronized"
    private static let function: NTPAdjtime? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "ntp_adjtime") else { return nil }
        return unsafeBitCast(symbol, to: NTPAdjtime.self)
    }()
    private static let statusOffset: Int = {
        let align = MemoryLayout<CLong>.alignment
        return (MemoryLayout<UInt32>.size + align - 1) / align * align + 4 * MemoryLayout<CLong>.size
    }()

    public func unsynchronisedReason() -> String? {
        guard let adjtime = Self.function else { return "cannot ask the kernel whether the clock is synchronised (no ntp_adjtime)" }
        // 512 zero bytes: more than any struct timex (208 on 64-bit), and modes = 0 reads only.
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 512, alignment: 16)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: 512)
        guard adjtime(buffer) >= 0 else {
            let error = errno
            // A sandbox that forbids even reading the clock's state (systemd's ProtectClock=)
            // leaves one other witness: systemd-timesyncd's flag file.
            if error == EPERM, FileManager.default.fileExists(atPath: Self.timesyncdFlag) { return nil }
            return "cannot ask the kernel whether the clock is synchronised (\(String(cString: strerror(error))))"
                + (error == EPERM ? ": the service may not read the clock's state; remove ProtectClock= from its unit, or set [daemon] trust_system_clock = true if the clock is right" : "")
        }
        let status = buffer.load(fromByteOffset: Self.statusOffset, as: Int32.self)
        if status & Self.staUnsync != 0 {
            return "the kernel says the system clock is not synchronised (no NTP yet: check 'timedatectl', e.g. systemd-timesyncd or chrony)"
        }
        return nil
    }
}

/// The test hook behind `ARIATA_CLOCK_SYNC_FILE`: the file's first word is `synchronised`
/// (or `synchronized`) or anything else, read on every question. A missing file counts as
/// unsynchronised, so a broken test setup holds records rather than sending wrong times.
public struct FileClockSync: ClockSyncSource {
    public let path: String

    public init(path: String) { self.path = path }

    public func unsynchronisedReason() -> String? {
        guard let data = FileManager.default.contents(atPath: path) else {
            return "clock state file \(path) (\(ClockSync.testFileVariable)) cannot be read"
        }
        // Trimmed with the standard library's calls: the daemon asks at every record, and
        // Foundation's string calls would keep their code resident for a test hook.
        let word = String(decoding: data, as: UTF8.self).trimmingWhitespace().lowercased()
        if word == "synchronised" || word == "synchronized" { return nil }
        return "clock state file \(path) (\(ClockSync.testFileVariable)) says \"\(word)\""
    }
}
