import Foundation
import Platform
import Upload

/// The daemon's anonymous memory (docs/architecture.md, Memory): glibc keeps to one malloc
/// arena instead of eight per core (the threads allocate little and seldom, so they share
/// the main heap rather than each keeping an arena's pages), so memory freed by one thread is reused
/// by the others, and memory freed after a burst (an upload's bodies) is handed back at
/// each maintenance round.
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
    /// files so far (docs/decisions/0005-start-up-page-drop.md): before `run` or `sync`
    /// parses its arguments, as each stage of the daemon's start ends, and at every
    /// maintenance round. What stays resident is what the daemon runs, not what the
    /// loader, the start-up or the last upload cycle touched:
    ///
    /// - every mapping of a file is marked `MADV_RANDOM`, code included, so a later fault
    ///   reads the one page it needs, not the 128 KiB around it;
    /// - a read-only mapping's pages that are still the file's are unmapped
    ///   (`MADV_DONTNEED`: the next access maps the file's page again). Not
    ///   `MADV_PAGEOUT`, which the kernel ignores for a file the process may not write, as
    ///   the service user may not write /usr/bin/ariata-agent. In a mapping that also holds
    ///   copy-on-write copies (a position-independent program's relocated pointers), only
    ///   the runs of the file's own pages, found in /proc/self/pagemap: `MADV_DONTNEED`
    ///   would throw a copy away;
    /// - a writable mapping's file pages are left to `MADV_PAGEOUT` (it never throws a
    ///   copy away, even one another thread makes meanwhile), which works only where the
    ///   process may write the file;
    /// - with `handingBackCache`, the file's pages left in the page cache but mapped by
    ///   nobody are handed back (`POSIX_FADV_DONTNEED`): the kernel's fault-around maps
    ///   every cached page within 64 KiB of a fault, so without this a page the daemon
    ///   runs brought its cached neighbours back into the resident set. But what is handed
    ///   back and run again is read from the disk: the start and the first two rounds hand
    ///   back, and the later rounds do not, or every round would read the streams' own
    ///   pages from the card again and wait for each.
    ///
    /// Returns the bytes of the mappings advised; a kernel that refuses the advice changes
    /// nothing.
    @discardableResult
    public static func dropMappedFilePages(handingBackCache: Bool = true) -> Int {
        // /proc/self/maps, not smaps: a drop runs when the most is resident, and smaps (a
        // kilobyte of text per mapping, parsed into strings) would add its heap to that
        // moment; pagemap, read a few pages at a time, tells the copies apart instead.
        guard let pagemap = PageMap() else { return 0 }
        var dropped = 0
        var files = Set<String>()
        for mapping in MapsLine.read("self") ?? [] where isFileMapping(mapping) {
            guard let start = UnsafeMutableRawPointer(bitPattern: mapping.start) else { continue }
            let length = Int(mapping.end - mapping.start)
            _ = madvise(start, length, MADV_RANDOM)
            let pages = pagemap.filePageRuns(from: mapping.start, to: mapping.end)
            if mapping.permissions.utf8.contains(UInt8(ascii: "w")) {
                dropped += advise(pages.runs, advice: madvPageOut, pageSize: pagemap.pageSize)
            } else if !pages.holdsCopies {
                if madvise(start, length, MADV_DONTNEED) == 0 { dropped += length }
            } else {
                dropped += advise(pages.runs, advice: MADV_DONTNEED, pageSize: pagemap.pageSize)
            }
            files.insert(mapping.path)
        }
        for path in files where handingBackCache {
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            _ = posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED)
            close(descriptor)
        }
        return dropped
    }

    /// `factory`, dropping the mapped file pages first: a connection's TLS handshake then
    /// runs beside the pages the streams run, not beside all they ran since the last round.
    public static func droppingPagesFirst(_ factory: @escaping HTTPTransportFactory) -> HTTPTransportFactory {
        { settings, isCancelled in
            dropMappedFilePages(handingBackCache: false)
            return try factory(settings, isCancelled)
        }
    }

    /// A private mapping of a regular file (not a device, not a file since deleted, not a
    /// shared mapping such as SQLite's -shm).
    static func isFileMapping(_ mapping: MapsLine) -> Bool {
        mapping.inode != "0" && mapping.path.hasPrefix("/") && !mapping.path.hasPrefix("/dev/")
            && !mapping.path.hasSuffix("(deleted)") && mapping.permissions.hasSuffix("p")
    }

    /// Gives `advice` to each run of pages; returns the bytes advised.
    private static func advise(_ runs: [PageMap.Run], advice: Int32, pageSize: UInt) -> Int {
        var advised = 0
        for run in runs {
            let length = Int((run.end - run.start) * pageSize)
            guard let address = UnsafeMutableRawPointer(bitPattern: run.start * pageSize) else { continue }
            if madvise(address, length, advice) == 0 { advised += length }
        }
        return advised
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
