import Foundation

/// Bytes read but not yet split into lines. A line is complete only with its newline:
/// what follows the last newline waits for the writer to finish it.
struct LineBuffer {
    static let maxLineBytes = 64 * 1024

    enum Line {
        /// The line without its newline, and its size in the input with the newline.
        case text(Substring, bytes: Int)
        /// Part of a line longer than `maxLineBytes`, skipped whole; `first` on the
        /// first part only, so the line is counted once.
        case overlong(bytes: Int, first: Bool)
    }

    private var bytes: [UInt8] = []
    private var start = 0
    /// Inside an overlong line: drop everything up to its newline.
    private var skipping = false

    var pendingBytes: Int { bytes.count - start }

    mutating func append(_ chunk: UnsafeRawBufferPointer) {
        if start > 0 && start >= bytes.count / 2 {
            bytes.removeFirst(start)
            start = 0
        }
        bytes.append(contentsOf: chunk)
    }

    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        start = 0
        skipping = false
    }

    /// The next complete line, or nil when none is complete yet.
    mutating func next() -> Line? {
        let available = bytes.count - start
        guard available > 0 else { return nil }
        let newline: Int? = bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return nil }
            guard let hit = memchr(base + start, 0x0A, available) else { return nil }
            return base.distance(to: UnsafeRawPointer(hit))
        }
        guard let newline else {
            if skipping || available > Self.maxLineBytes {
                // Consume what we have; keep dropping until the newline turns up.
                start = bytes.count
                defer { skipping = true }
                return .overlong(bytes: available, first: !skipping)
            }
            return nil
        }
        let length = newline - start
        defer { start = newline + 1 }
        if skipping {
            skipping = false
            return .overlong(bytes: length + 1, first: false)
        }
        if length > Self.maxLineBytes { return .overlong(bytes: length + 1, first: true) }
        var end = newline
        if end > start, bytes[end - 1] == 0x0D { end -= 1 } // CRLF
        let text = String(decoding: bytes[start..<end], as: UTF8.self)
        return .text(Substring(text), bytes: length + 1)
    }

    /// What is left when the input ends for good (a rotated file whose last line has no
    /// newline): handed out as a last line.
    mutating func takeRest() -> Line? {
        let available = bytes.count - start
        guard available > 0 else { return nil }
        let wasSkipping = skipping
        defer { reset() }
        if wasSkipping || available > Self.maxLineBytes { return .overlong(bytes: available, first: !wasSkipping) }
        return .text(Substring(String(decoding: bytes[start...], as: UTF8.self)), bytes: available)
    }
}
