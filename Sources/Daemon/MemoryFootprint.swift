import Foundation

/// The daemon's anonymous memory (issue 14; README, "Memory"): glibc keeps to two malloc
/// arenas instead of eight per core, so memory freed by one thread is reused by the others,
/// and memory freed after a burst (an upload's bodies) is handed back at each health check.
public enum MemoryFootprint {
    /// At most two malloc arenas (M_ARENA_MAX).
    public static func limitMallocArenas() {
        _ = Glibc.mallopt?(mArenaMax, 2)
    }

    /// Hands memory freed after a burst (an upload's bodies) back to the system.
    public static func releaseFreedMemory() {
        _ = Glibc.mallocTrim?(0)
    }

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
