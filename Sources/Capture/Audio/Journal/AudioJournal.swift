import Dispatch
import AgentCore
import Foundation
import Logging
import Platform
import Synchronization

/// The microphone's audio journal: a directory beside the queue database that holds, for
/// every chunk not yet in the queue, one file of the Ogg pages encoded so far, named by
/// what its record needs besides (`JournalHeader`: `<id>_2_s<start>_...ogg`). A SIGKILL,
/// crash or power cut then costs only the audio not yet in a page; `JournalRecovery` turns
/// what is left into records at the next start. A chunk's file is removed once its record
/// is in the queue (or linked into it: `AttachmentStore`).
public final class AudioJournal: Sendable {
    public let directory: String
    /// Pages are fdatasync'ed on the capture thread between two reads (one every 2 s) once
    /// the oldest of them has waited this long (the daemon passes `[microphone]
    /// journal_sync_seconds`, 10 s by default), so a page waits at most this plus one read
    /// for its sync (docs/streams/microphone.md; the measured cost is in docs/performance.md).
    let syncInterval: Duration
    let logger: Logger
    /// The directory's fsync after a chunk's file is made runs here, off the capture thread
    /// (a page's sync waits for this queue once, so the file's name, its header, is durable
    /// before any of its pages).
    let syncQueue = DispatchQueue(label: "ariata.microphone.journal")

    public struct Stats: Sendable, Equatable {
        /// Ogg bytes appended to journal files.
        public var bytes = 0
        /// fdatasync/fsync calls made (pages and the directory).
        public var syncs = 0
        /// The longest a page waited between its write and the end of its fdatasync: what
        /// a power cut can cost besides the audio not yet in a page.
        public var longestUnsynced: Duration = .zero
    }
    private let stats = Mutex(Stats())
    private let open = Mutex<[UUID: JournalFile]>([:])

    public init(directory: String, logger: Logger, syncInterval: Duration = .milliseconds(1_500)) {
        self.directory = directory
        self.logger = logger
        self.syncInterval = syncInterval
    }

    /// `<database>.audio-journal`: beside the database, on the same file system (the storage
    /// guard's free-space check covers it), and one per database.
    public static func directory(forDatabase path: String) -> String {
        path + ".audio-journal"
    }

    public func currentStats() -> Stats { stats.withLock { $0 } }

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
    /// (the directory synced on the sync queue, before any of its pages) and opened for
    /// appending.
    public func begin(_ beginning: ChunkBeginning, bitrate: Int, provisional: ProvisionalTime? = nil) throws -> JournalFile {
        let name = try JournalHeader(beginning: beginning, bitrate: bitrate, provisional: provisional).fileName()
        let path = "\(directory)/\(name)"
        let descriptor = try create(path)
        let file = JournalFile(id: beginning.id, path: path, descriptor: descriptor, journal: self)
        open.withLock { $0[beginning.id] = file }
        syncQueue.async { [self] in
            FileWrites.syncDirectory(directory)
            stats.withLock { $0.syncs += 1 }
        }
        return file
    }

    /// The chunk's last page is in its file: no more appends.
    func closed(_ id: UUID) {
        open.withLock { _ = $0.removeValue(forKey: id) }
    }

    /// Called from the capture loop before every read, so after each block's pages: syncs,
    /// on the capture thread, the files whose oldest unsynced page is `syncInterval` old.
    public func syncDue() {
        for file in open.withLock({ Array($0.values) }) {
            file.syncIfDue()
        }
    }

    /// Removes a chunk's journal: its record is in the queue, or the chunk was dropped.
    /// Not fsynced: should a power cut undo the unlink, recovery finds the record already
    /// queued and removes the journal again. (A version 1 journal: pages first, then the
    /// header, so a crash in between leaves a header alone, "nothing to recover".)
    public func remove(_ id: UUID) {
        open.withLock { _ = $0.removeValue(forKey: id) }
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

    func counted(bytes: Int) { stats.withLock { $0.bytes += bytes } }
    func countedSync(waited: Duration? = nil) {
        stats.withLock { stats in
            stats.syncs += 1
            if let waited, waited > stats.longestUnsynced { stats.longestUnsynced = waited }
        }
    }

    /// Waits until every sync asked for so far is done (tests, benchmarks, stop).
    public func waitForSyncs() { syncQueue.sync {} }

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
