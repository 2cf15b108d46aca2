import Glibc

/// One line of /proc/PID/maps: "start-end perms offset dev inode path", the path empty for
/// an anonymous mapping.
///
/// Read and parsed with `read(2)` and byte comparisons, not Foundation: the daemon reads its
/// own maps at every page drop (docs/decisions/0005-start-up-page-drop.md), and Foundation's
/// file and string calls (`FileHandle`, `trimmingCharacters`) would bring their code and
/// CoreFoundation's Unicode tables back into the resident set at each one.
public struct MapsLine: Sendable {
    public let start: UInt
    public let end: UInt
    public let permissions: String
    public let inode: String
    public let path: String
    /// The mapping's anonymous (private, copy-on-write) memory in KiB, from
    /// /proc/PID/smaps; nil when read from /proc/PID/maps, which does not tell.
    public var anonymousKiB: Int?

    public init?(_ line: Substring) {
        self.init(bytes: Array(line.utf8)[...])
    }

    init?(bytes line: ArraySlice<UInt8>) {
        var fields = FieldReader(line)
        guard let range = fields.next(), let permissions = fields.next(), fields.next() != nil, fields.next() != nil,
              let inode = fields.next(),
              let dash = range.firstIndex(of: UInt8(ascii: "-")),
              let start = Self.hex(range[..<dash]), let end = Self.hex(range[(dash + 1)...]), end > start else { return nil }
        self.start = start
        self.end = end
        self.permissions = String(decoding: permissions, as: UTF8.self)
        self.inode = String(decoding: inode, as: UTF8.self)
        // The path follows the inode after a run of spaces; it may hold spaces itself.
        path = String(decoding: fields.remainder(), as: UTF8.self)
    }

    /// Every line of /proc/`process`/maps ("self" or a pid), nil when it cannot be read. Read
    /// to the end: the file reports a size of 0 and the kernel hands it out about a page at
    /// a time (one read of its first 4,000 bytes once made the start's drop miss most
    /// libraries).
    /// With `withAnonymousPages`, read from /proc/`process`/smaps instead, each mapping
    /// with its `anonymousKiB`.
    public static func read(_ process: String, withAnonymousPages: Bool = false) -> [MapsLine]? {
        guard let bytes = readWhole("/proc/\(process)/\(withAnonymousPages ? "smaps" : "maps")") else { return nil }
        var mappings: [MapsLine] = []
        let anonymous = Array("Anonymous:".utf8)
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            if withAnonymousPages, line.starts(with: anonymous) {
                guard !mappings.isEmpty else { continue }
                var fields = FieldReader(line.dropFirst(anonymous.count))
                mappings[mappings.count - 1].anonymousKiB = fields.next().flatMap { Int(String(decoding: $0, as: UTF8.self)) }
            } else if let mapping = MapsLine(bytes: line) {
                mappings.append(mapping)
            }
        }
        return mappings
    }

    /// A file of /proc read to its end; nil when it cannot be opened or read.
    private static func readWhole(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32 * 1_024)
        // Read into a buffer of its own and appended as a block: appending a run of zeros to
        // read into went element by element in a debug build (the one the tests run, whose
        // daemons read their maps at every maintenance round).
        let chunk = 8 * 1_024
        var buffer = [UInt8](repeating: 0, count: chunk)
        while true {
            let got = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, chunk) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { return nil }
            if got == 0 { return bytes }
            bytes.append(contentsOf: buffer[..<got])
        }
    }

    private static func hex(_ digits: ArraySlice<UInt8>) -> UInt? {
        guard !digits.isEmpty, digits.count <= UInt.bitWidth / 4 else { return nil }
        var value: UInt = 0
        for digit in digits {
            let nibble: UInt8
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = digit - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt(nibble)
        }
        return value
    }
}

/// The space-separated fields of a line, then what is left after them.
private struct FieldReader {
    private var rest: ArraySlice<UInt8>

    init(_ line: ArraySlice<UInt8>) { rest = line }

    /// The next field, leading spaces skipped; nil at the end of the line.
    mutating func next() -> ArraySlice<UInt8>? {
        skipBlanks()
        guard !rest.isEmpty else { return nil }
        let end = rest.firstIndex(where: Self.isBlank) ?? rest.endIndex
        defer { rest = rest[end...] }
        return rest[..<end]
    }

    /// The rest of the line after its leading blanks (a path may end in a space).
    mutating func remainder() -> ArraySlice<UInt8> {
        skipBlanks()
        return rest
    }

    private mutating func skipBlanks() {
        rest = rest.drop(while: Self.isBlank)
    }

    private static func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
}
