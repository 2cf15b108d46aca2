import AgentCore
import Foundation

/// What a chunk's record needs that its Ogg pages do not say, kept in the name of the
/// chunk's journal file (`<id>_2_s<start>_o<overlap>_r<rate>_b<bitrate>[_k<boot id>_t<boot
/// time>].ogg`), so a chunk's journal is one file: its name is on disk with the file's
/// directory entry, before any of its pages is synced, and costs no data block and no fsync
/// of its own (a header file of its own did, every 28 s; docs/decisions/0002-one-file-audio-journal.md).
///
/// Journals of version 1 (0.1.x) kept it in a `<id>.json` beside `<id>.ogg`; those are
/// still read (`legacy(json:)`), so a journal a crash left before an upgrade is recovered.
public struct JournalHeader: Codable, Sendable, Equatable {
    /// Bumped if a field changes meaning; a journal of an unknown version is left alone.
    public static let currentVersion = 2

    public var version: Int
    public var recordID: UUID
    /// Capture time of the chunk's first sample, Unix seconds (a Double keeps it exact: its
    /// shortest decimal form reads back as the same Double).
    public var start: Double
    public var overlapFrames: Int
    public var sampleRate: Int
    public var bitrate: Int
    /// Where the chunk began on the boot clock when its time came from a clock that could
    /// not be believed (nil otherwise): a chunk recovered after a crash is then held and
    /// corrected like any other (see ClockCorrection), instead of sent with a wrong time.
    public var bootID: String?
    public var bootTime: Double?

    public init(beginning: ChunkBeginning, bitrate: Int, provisional: ProvisionalTime? = nil) {
        bootID = provisional?.bootID
        bootTime = provisional?.bootTime
        version = Self.currentVersion
        recordID = beginning.id
        start = beginning.start.timeIntervalSince1970
        overlapFrames = beginning.overlapFrames
        sampleRate = beginning.sampleRate
        self.bitrate = bitrate
    }

    enum CodingKeys: String, CodingKey {
        case version, recordID = "record_id", start, overlapFrames = "overlap_frames"
        case sampleRate = "sample_rate", bitrate, bootID = "boot_id", bootTime = "boot_time"
    }

    /// The provisional time recorded when the chunk began, nil when its time was believed.
    public var provisional: ProvisionalTime? {
        guard let bootID, let bootTime else { return nil }
        return ProvisionalTime(bootID: bootID, bootTime: bootTime)
    }

    /// The journal file's name: the record's id first (so `AudioJournal` finds a chunk's
    /// file by its id), then the version and one letter-tagged field per value.
    public func fileName() throws -> String {
        var fields = [recordID.uuidString.lowercased(), String(version), "s\(start)", "o\(overlapFrames)",
                      "r\(sampleRate)", "b\(bitrate)"]
        if let bootID, let bootTime {
            // /proc's boot id is a UUID; anything else could not be read back from a name.
            guard !bootID.isEmpty, bootID.allSatisfy({ $0.isASCII && ($0.isHexDigit || $0 == "-") }) else {
                throw JournalError(path: recordID.uuidString, action: "name the journal of chunk",
                                   reason: "the boot id \"\(bootID)\" is not a UUID")
            }
            fields += ["k\(bootID)", "t\(bootTime)"]
        }
        return fields.joined(separator: "_") + Self.fileExtension
    }

    static let fileExtension = ".ogg"

    /// What a journal file's name says about it.
    enum Name: Equatable {
        /// A journal of this version, and its header.
        case journal(JournalHeader)
        /// A chunk's journal of a version this build does not know (a newer one): left alone.
        case unknownVersion(UUID)
        /// A file without a header in its name: a version 1 page file or header, or no journal.
        case other
    }

    static func parse(fileName name: String) -> Name {
        guard name.hasSuffix(fileExtension) else { return .other }
        let fields = name.dropLast(fileExtension.count).split(separator: "_", omittingEmptySubsequences: false)
        guard fields.count >= 2, let id = UUID(uuidString: String(fields[0])) else { return .other }
        guard let version = Int(fields[1]), version >= 2 else { return .other }
        guard version == currentVersion else { return .unknownVersion(id) }
        var tagged: [Character: Substring] = [:]
        for field in fields.dropFirst(2) {
            guard let tag = field.first, tagged[tag] == nil else { return .other }
            tagged[tag] = field.dropFirst()
        }
        guard tagged.count == 4 || tagged.count == 6,
              let start = tagged["s"].flatMap({ Double($0) }), start.isFinite,
              let overlap = tagged["o"].flatMap({ Int($0) }), overlap >= 0,
              let rate = tagged["r"].flatMap({ Int($0) }), rate > 0,
              let bitrate = tagged["b"].flatMap({ Int($0) }), bitrate > 0 else { return .other }
        var provisional: ProvisionalTime?
        if tagged.count == 6 {
            guard let bootID = tagged["k"], !bootID.isEmpty,
                  let bootTime = tagged["t"].flatMap({ Double($0) }), bootTime.isFinite else { return .other }
            provisional = ProvisionalTime(bootID: String(bootID), bootTime: bootTime)
        }
        var header = JournalHeader(beginning: ChunkBeginning(id: id, start: Date(timeIntervalSince1970: start),
                                                             overlapFrames: overlap, sampleRate: rate),
                                   bitrate: bitrate, provisional: provisional)
        header.start = start
        return .journal(header)
    }

    /// A version 1 header (`<id>.json`, written by 0.1.x beside `<id>.ogg`); nil when
    /// unreadable or of another version.
    static func legacy(json: Data) -> JournalHeader? {
        guard let header = try? JSONDecoder().decode(JournalHeader.self, from: json), header.version == 1 else { return nil }
        return header
    }
}
