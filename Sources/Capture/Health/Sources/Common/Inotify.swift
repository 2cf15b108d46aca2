import Foundation

/// inotify(7): the kernel tells a file source when its file or directory changes, so an
/// idle source sleeps in poll(2) with no time-out instead of polling the file.
final class Inotify {
    struct Event {
        var watch: Int32
        var mask: UInt32
        var name: String
    }

    let fd: Int32

    init() throws {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EMFILE) }
    }

    /// The watch descriptor, or nil with errno set.
    func add(_ path: String, mask: UInt32) -> Int32? {
        let wd = inotify_add_watch(fd, path, mask)
        return wd >= 0 ? wd : nil
    }

    func remove(_ watch: Int32) {
        _ = inotify_rm_watch(fd, watch)
    }

    /// Reads every queued event.
    func drain() -> [Event] {
        var events: [Event] = []
        let size = 16 * 1024
        var buffer = [UInt8](repeating: 0, count: size)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, size) }
            guard n > 0 else { break }
            buffer.withUnsafeBytes { raw in
                var offset = 0
                let header = MemoryLayout<inotify_event>.size
                while offset + header <= n {
                    let wd = raw.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                    let mask = raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    let length = Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    let nameBytes = raw[(offset + header)..<min(n, offset + header + length)].prefix { $0 != 0 }
                    events.append(Event(watch: wd, mask: mask, name: String(decoding: nameBytes, as: UTF8.self)))
                    offset += header + length
                }
            }
        }
        return events
    }

    deinit { close(fd) }
}
