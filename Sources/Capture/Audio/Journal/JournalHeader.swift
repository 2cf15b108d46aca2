import AgentCore
import Foundation

/// The sidecar of a journal file (`<id>.json`): what a chunk's record needs that the Ogg
/// pages do not say. Written when the chunk begins, before its first page.
public struct JournalHeader: Codable, Sendable, Equatable {
    /// Bumped if a field changes meaning; a journal of an unknown version is left alone.
    public static let currentVersion = 1

    public var version: Int
    public var recordID: UUID
    /// Capture time of the chunk's first sample, Unix seconds (a Double keeps it exact).
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

    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(self)
    }
}
