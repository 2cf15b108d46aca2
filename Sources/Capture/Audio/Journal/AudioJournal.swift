import AgentCore
import Foundation
import Logging
import Platform

/// The microphone's audio journal: a directory beside the queue database that holds, for
/// every chunk not yet in the queue, one file of the Ogg pages encoded so far, named by
/// what its record needs besides (`JournalHeader`: `<id>_2_s<start>_...ogg`). A SIGKILL,
/// crash or power cut then costs only the audio not yet in a page; `JournalRecovery` turns
/// what is left into records at the next start. A chunk's file is removed once its record
/// is in the queue (or linked into it: `AttachmentStore`).
public final class AudioJournal: Sendable {
    public let directory: String
    let logger: Logger
    /// When each chunk's journal reaches the disk (docs/streams/microphone.md; the measured
    /// cost is in docs/performance.md).
    public let durability: JournalDurability

    /// - Parameter syncInterval: how long a page may wait for its fdatasync (the daemon
    ///   passes `[microphone] journal_sync_seconds`).
    public init(directory: String, logger: Logger, syncInterval: Duration = .milliseconds(1_500)) {
        self.directory = directory
        self.logger = logger
        self.durability = JournalDurability(directory: directory, syncInterval: syncInterval)
    }

    /// `<database>.audio-journal`: beside the database, on the same file system (the storage
    /// guard's free-space check covers it), and one per database.
    public static func directory(forDatabase path: String) -> String {
        path + ".audio-journal"
    }

    /// Creates the directory (0700: it holds recordings).
    public func prepare() throws {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw JournalError(path: directory, action: "create the audio journal directory", reason: "\(error)")
        }
    }

    /// The files of chunk `id` in the journal (its one file; a version 1 journal's page
    /// file and header), found by the id their names begin with.
    func files(of id: UUID) -> [String] {
        let prefix = id.uuidString.lowercased()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasPrefix(prefix) }.sorted().map { "\(directory)/\($0)" }
    }

    /// The page file of chunk `id`, nil when it has none in the journal.
    func oggPath(_ id: UUID) -> String? {
        files(of: id).first { $0.hasSuffix(JournalHeader.fileExtension) }
    }

    /// Starts the journal of a chunk: its file is made under a name that holds its header
    /// and opened for appending (`JournalDurability` makes the name durable before any page).
    public func begin(_ beginning: ChunkBeginning, bitrate: Int, provisional: ProvisionalTime? = nil) throws -> JournalFile {
        let name = try JournalHeader(beginning: beginning, bitrate: bitrate, provisional: provisional).fileName()
        let path = "\(directory)/\(name)"
        let descriptor = try create(path)
        let file = JournalFile(id: beginning.id, path: path, descriptor: descriptor, journal: self)
        durability.began(file)
        return file
    }

    /// Removes a chunk's journal: its record is in the queue, or the chunk was dropped.
    /// Not fsynced: should a power cut undo the unlink, recovery finds the record already
    /// queued and removes the journal again. (A version 1 journal: pages first, then the
    /// header, so a crash in between leaves a header alone, "nothing to recover".)
    public func remove(_ id: UUID) {
        durability.forget(id)
        let files = files(of: id)
        for path in files where path.hasSuffix(JournalHeader.fileExtension) { unlink(path) }
        for path in files where !path.hasSuffix(JournalHeader.fileExtension) { unlink(path) }
    }

    /// Journals on disk, oldest chunk first, and files that are no journal (to remove):
    /// neither a page file whose name holds a header, nor a version 1 header and its pages.
    /// A chunk's journal of an unknown (newer) version is in neither list: it is left alone.
    func entries() -> (journals: [(header: JournalHeader, pages: String)], strays: [String]) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var journals: [(header: JournalHeader, pages: String)] = []
        var claimed = Set<String>()
        for name in names {
            switch JournalHeader.parse(fileName: name) {
            case .journal(let header):
                claimed.insert(name)
                journals.append((header, "\(directory)/\(name)"))
            case .unknownVersion:
                claimed.insert(name)
            case .other:
                // Version 1: `<id>.json` beside `<id>.ogg`.
                guard name.hasSuffix(".json"), let data = FileManager.default.contents(atPath: "\(directory)/\(name)"),
                      let header = JournalHeader.legacy(json: data),
                      "\(header.recordID.uuidString.lowercased()).json" == name else { continue }
                let pages = "\(header.recordID.uuidString.lowercased())\(JournalHeader.fileExtension)"
                claimed.formUnion([name, pages])
                journals.append((header, "\(directory)/\(pages)"))
            }
        }
        let strays = names.filter { !claimed.contains($0) }.map { "\(directory)/\($0)" }
        return (journals.sorted { $0.header.start < $1.header.start }, strays)
    }

    private func create(_ path: String) throws -> Int32 {
        let descriptor = Foundation.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw JournalError(path: path, action: "create", reason: String(cString: strerror(errno)))
        }
        return descriptor
    }

}

public struct JournalError: Error, CustomStringConvertible {
    public let path: String
    public let action: String
    public let reason: String

    public var description: String {
        "cannot \(action) \(path): \(reason); check that the directory of [storage] database is writable by the service user and the disk is not full"
    }
}
