import Foundation

/// The process's own /proc/self/pagemap: for each page of a mapping, whether it is present
/// and whether it is still the file's page or a private (copy-on-write) copy of it (bit 63
/// present, bit 61 file page or shared). Read a few pages of entries at a time, so that
/// looking at a 100 MB mapping costs a fixed 8 KB buffer (`MemoryFootprint`).
final class PageMap {
    /// Pages [start, end) by page number.
    struct Run: Equatable {
        var start: UInt
        var end: UInt
    }

    let pageSize: UInt
    private let descriptor: Int32
    private var entries = [UInt64](repeating: 0, count: 1024)

    init?() {
        let size = sysconf(Int32(_SC_PAGESIZE))
        guard size > 0 else { return nil }
        let descriptor = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        pageSize = UInt(size)
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// The runs of present pages in [start, end) that are the file's own, and whether any
    /// present page there is a private copy. An unreadable range counts as holding copies,
    /// so that no mapping is unmapped whole on a guess.
    func filePageRuns(from start: UInt, to end: UInt) -> (runs: [Run], holdsCopies: Bool) {
        var runs: [Run] = []
        var holdsCopies = false
        var page = start / pageSize
        let last = end / pageSize
        while page < last {
            let count = Int(min(UInt(entries.count), last - page))
            let read = entries.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress, count * 8, off_t(page * 8))
            }
            guard read == count * 8 else { return (runs, true) }
            for index in 0..<count {
                let entry = entries[index]
                guard entry >> 63 == 1 else { continue }
                guard (entry >> 61) & 1 == 1 else { holdsCopies = true; continue }
                let number = page + UInt(index)
                if let previous = runs.last, previous.end == number {
                    runs[runs.count - 1].end = number + 1
                } else {
                    runs.append(Run(start: number, end: number + 1))
                }
            }
            page += UInt(count)
        }
        return (runs, holdsCopies)
    }
}
