import Foundation
import Platform

/// The daemon's anonymous memory (docs/architecture.md, Memory): glibc keeps to one malloc
/// arena instead of eight per core (the threads allocate little and seldom, so they share
/// the main heap; a second arena held 0.4-1.1 MB), so memory freed by one thread is reused
/// by the others, and memory freed after a burst (an upload's bodies) is handed back at
/// each liveness check.
public enum MemoryFootprint {
    /// One malloc arena (M_ARENA_MAX), before any thread starts.
    public static func limitMallocArenas() {
        _ = Glibc.mallopt?(mArenaMax, 1)
    }

    /// Hands memory freed after a burst (an upload's bodies) back to the system.
    public static func releaseFreedMemory() {
        _ = Glibc.mallocTrim?(0)
    }

    /// Drops the pages that the process has mapped from the program's and its libraries'
    /// files so far (docs/decisions/0005-start-up-page-drop.md): as the daemon starts, and again once its streams
    /// run (`AgentDaemon`, the second maintenance round). They are read-only
    /// (code, constants): clean page cache that the kernel reads again when it is next
    /// used, so what stays resident is what the daemon runs, not what the loader and the
    /// start-up touched. `MADV_PAGEOUT` (Linux 5.4) drops only the pages no other process
    /// maps (glibc's stay). Constants (read-only, not code) are also marked `MADV_RANDOM`,
    /// so a lookup in a table (ICU's, Swift's metadata) reads its page and not 128 KB
    /// around it; code is left to the kernel's read-ahead (marking it too changed nothing:
    /// 28.6 MB either way over 3 minutes, from a cold page cache). Returns the bytes of the
    /// mappings dropped; a kernel that refuses the advice changes nothing.
    @discardableResult
    public static func dropMappedFilePages() -> Int {
        var dropped = 0
        for mapping in MapsLine.read("self", withAnonymousPages: true) ?? [] where isDroppable(mapping) {
            guard let start = UnsafeMutableRawPointer(bitPattern: mapping.start) else { continue }
            let length = Int(mapping.end - mapping.start)
            if !mapping.permissions.contains("x") { _ = madvise(start, length, MADV_RANDOM) }
            if madvise(start, length, madvPageOut) == 0 { dropped += length }
        }
        return dropped
    }

    /// Read-only mappings of regular files whose pages are all the file's. A mapping that
    /// holds anonymous pages (copy-on-write copies: a position-independent program's
    /// relocated pointers, about 760 KB of ours, made read-only after the loader wrote
    /// them) is left alone: `MADV_PAGEOUT` would write those pages to swap, on a board
    /// whose swap is on its card, and read them back at their next use.
    static func isDroppable(_ mapping: MapsLine) -> Bool {
        mapping.inode != "0" && !mapping.permissions.contains("w") && mapping.path.hasPrefix("/")
            && !mapping.path.hasPrefix("/dev/") && !mapping.path.hasSuffix("(deleted)")
            && mapping.anonymousKiB == 0
    }

    /// MADV_PAGEOUT in linux/mman.h (not in Swift's Glibc module on every distribution).
    private static let madvPageOut: Int32 = 21

    /// malloc.h is not in Swift's Glibc module: its two calls through dlsym.
    private enum Glibc {
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        typealias MallocTrim = @convention(c) (Int) -> Int32
        static let mallopt: Mallopt? = symbol("mallopt").map { unsafeBitCast($0, to: Mallopt.self) }
        static let mallocTrim: MallocTrim? = symbol("malloc_trim").map { unsafeBitCast($0, to: MallocTrim.self) }
        static func symbol(_ name: String) -> UnsafeMutableRawPointer? {
            guard let handle = dlopen(nil, RTLD_NOW) else { return nil }
            return dlsym(handle, name)
        }
    }
    /// M_ARENA_MAX in glibc's malloc.h.
    private static let mArenaMax: Int32 = -8
}
