import AgentCore
import Foundation
import XCTest

/// A backlog of records of realistic sizes on a small file system, for the tests of the
/// storage guard and of what `status` says of it (both need the same disk and backlog).
public protocol StorageBacklogWriting {}

extension StorageBacklogWriting {
    /// A 30 s Opus chunk, base64 in its JSON record; a fix; a health sample.
    public static var audioBytes: Int { 80_000 }
    public static var locationBytes: Int { 300 }
    public static var healthBytes: Int { 200 }
    /// The free-disk floor the tests set, and a cap far away.
    public var floor: Int64 { 4 * StorageLimits.mebibyte }
    public var noCap: Int64 { 1_000_000 * StorageLimits.mebibyte }

    /// A small file system of its own; the test is skipped where none can be mounted.
    public func mount(_ kind: SmallFilesystem.Kind = .tmpfs, megabytes: Int = 40) throws -> SmallFilesystem {
        do {
            return try SmallFilesystem.make(kind, megabytes: megabytes)
        } catch let error as CannotMount {
            throw XCTSkip(error.description)
        }
    }

    public func record(_ stream: StreamName, at time: Date = Date()) -> NewRecord {
        let size = stream == .microphone ? Self.audioBytes : stream == .location ? Self.locationBytes : Self.healthBytes
        return TestRecords.sized(stream, bytes: size, at: time)
    }

    public func pending(_ database: AgentDatabase) throws -> [StreamName: Int] {
        Dictionary(uniqueKeysWithValues: try StreamName.allCases.map { ($0, try database.recordQueue.count(stream: $0, status: .pending)) })
    }

    public func describe(_ counts: [StreamName: Int]) -> String {
        StreamName.allCases.map { "\($0.rawValue) \(counts[$0] ?? 0)" }.joined(separator: ", ")
    }

    public func isStorageFull(_ error: Error) -> Bool {
        if case .storageFull = error as? QueueError { return true }
        return false
    }

    /// Writes a backlog: one audio chunk, then a location fix and a health sample, over
    /// and over, `audio` times (or until the disk is full when nil). Returns what was written.
    @discardableResult
    public func writeBacklog(_ database: AgentDatabase, audio: Int?) throws -> [StreamName: Int] {
        var written: [StreamName: Int] = [:]
        var round = 0
        while audio.map({ round < $0 }) ?? true {
            round += 1
            for stream in [StreamName.microphone, .location, .health] {
                do {
                    try database.recordQueue.enqueue(record(stream))
                    written[stream, default: 0] += 1
                } catch where audio == nil && isStorageFull(error) {
                    return written
                }
            }
        }
        return written
    }
}
