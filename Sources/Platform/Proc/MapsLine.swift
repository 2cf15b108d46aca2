import Foundation

/// One line of /proc/PID/maps: "start-end perms offset dev inode path", the path empty for
/// an anonymous mapping.
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
        let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
        guard fields.count >= 5 else { return nil }
        let bounds = fields[0].split(separator: "-")
        guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16),
              end > start else { return nil }
        self.start = start
        self.end = end
        permissions = String(fields[1])
        inode = String(fields[4])
        // The path follows the inode after a run of spaces.
        path = fields.count == 6 ? fields[5].trimmingCharacters(in: .whitespaces) : ""
    }

    /// Every line of /proc/`process`/maps ("self" or a pid), nil when it cannot be read. Read
    /// to the end: the file reports a size of 0 and the kernel hands it out about a page at
    /// a time; `String(contentsOfFile:)` returned only its first 4,000 bytes (37 of 215
    /// lines), so the start's drop once missed most libraries.
    /// With `withAnonymousPages`, read from /proc/`process`/smaps instead, each mapping
    /// with its `anonymousKiB`.
    public static func read(_ process: String, withAnonymousPages: Bool = false) -> [MapsLine]? {
        guard let file = FileHandle(forReadingAtPath: "/proc/\(process)/\(withAnonymousPages ? "smaps" : "maps")") else { return nil }
        defer { try? file.close() }
        guard let bytes = try? file.readToEnd() else { return nil }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        guard withAnonymousPages else { return lines.compactMap(MapsLine.init) }
        var mappings: [MapsLine] = []
        for line in lines {
            if line.hasPrefix("Anonymous:"), !mappings.isEmpty {
                mappings[mappings.count - 1].anonymousKiB = Int(line.dropFirst("Anonymous:".count).split(separator: " ").first ?? "")
            } else if let mapping = MapsLine(line) {
                mappings.append(mapping)
            }
        }
        return mappings
    }
}
