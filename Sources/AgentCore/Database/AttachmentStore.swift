import Foundation
import GRDB
import Logging
import Platform

/// The files of records' attachments (schema 4): `<database>.attachments/<record id>-<n>.<ext>`,
/// one per record that has one (a chunk's Ogg Opus audio), owned by the queue.
///
/// Order of writes, so that no crash leaves a record without its file or a file counted
/// twice:
/// 1. `place`: the file is made durable in the store (the journal file hard-linked in and
///    fdatasync'ed, or the bytes written by `FileWrites.replace`: a temporary file, fsynced
///    and renamed), and the directory fsync'ed;
/// 2. the record and its `attachments` row are committed together;
/// 3. a deleted record's file name goes to `attachment_trash` in the deleting transaction
///    (trigger), and `emptyTrash` unlinks it after the commit.
/// A crash between 1 and 2 leaves a file that no row names; a crash between 3's commit and
/// the unlink leaves a name in the trash. `sweep`, at the daemon's start (before capture),
/// removes both.
struct AttachmentStore: Sendable {
    let directory: String

    init(databasePath: String) {
        directory = Self.directory(forDatabase: databasePath)
    }

    static func directory(forDatabase path: String) -> String { path + ".attachments" }

    func path(_ name: String) -> String { "\(directory)/\(name)" }

    /// A new file name for an attachment of record `id`: the record's id and a part of its
    /// own, so a record refused as a duplicate never touches the file of the one it repeats.
    static func newName(id: UUID, fileExtension: String) -> String {
        let ext = fileExtension.filter { $0.isLetter || $0.isNumber }
        let own = UUID().uuidString.lowercased().prefix(8)
        return "\(id.uuidString.lowercased())-\(own)" + (ext.isEmpty ? "" : "." + ext)
    }

    /// Bytes the base64 of `bytes` adds to a payload under `field`: `,"field":"…"`.
    static func wireBytes(field: String, bytes: Int) -> Int {
        field.utf8.count + 6 + (bytes + 2) / 3 * 4
    }

    // MARK: Writing

    /// Makes `attachment` a durable file of the store named `name` (step 1 above).
    /// Throws `QueueError.storageFull` when the disk is full.
    func place(_ attachment: RecordAttachment, name: String) throws {
        try makeDirectory()
        let destination = path(name)
        if let source = attachment.existingFile, link(durable: source, expectedBytes: attachment.data.count, to: destination) {
            FileWrites.syncDirectory(directory)
            return
        }
        do {
            try FileWrites.replace(destination, with: attachment.data, mode: 0o600, durable: true)
        } catch let error as FileWriteError {
            throw failure(error.step.rawValue, error.path, error.code)
        }
    }

    /// Hard-links `source` as `destination` when it holds exactly `expectedBytes`, then
    /// fdatasyncs it; false when it cannot (then the bytes are written instead). Link
    /// first: the link's directory entry and the file's last blocks then go to the disk in
    /// one file-system journal commit (ext4's, say), where a sync before the link made two;
    /// `place` then fsyncs the directory. A crash before the record's commit leaves a
    /// linked file no row names (`sweep`). A source that is not linked is not synced: its
    /// durability is its owner's (the microphone's `JournalDurability`).
    private func link(durable source: String, expectedBytes: Int, to destination: String) -> Bool {
        let descriptor = open(source, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, Int(info.st_size) == expectedBytes else { return false }
        guard Foundation.link(source, destination) == 0 else { return false }
        guard fdatasync(descriptor) == 0 else {
            unlink(destination)
            return false
        }
        return true
    }

    /// Removes a file placed for a record whose commit then failed.
    func discard(_ name: String) {
        unlink(path(name))
    }

    private func makeDirectory() throws {
        var info = stat()
        if stat(directory, &info) == 0 { return }
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw failure("create the directory", directory, errno)
        }
    }

    private func failure(_ action: String, _ file: String, _ code: Int32) -> any Error {
        if code == ENOSPC || code == EDQUOT { return QueueError.storageFull(path: file) }
        return QueueError.cannotWriteAttachment(path: file, action: action, reason: String(cString: strerror(code)))
    }

    // MARK: Reading

    /// `payload` (a JSON object) with the file's bytes added under `field` as base64; nil
    /// when the file cannot be read (deleted by hand: the caller says so).
    func payload(_ payload: Data, field: String, name: String) -> Data? {
        guard let bytes = FileManager.default.contents(atPath: path(name)) else { return nil }
        guard let close = payload.lastIndex(of: UInt8(ascii: "}")) else { return nil }
        let head = payload[payload.startIndex ..< close]
        let isEmptyObject = !head.contains { !Self.isSpaceOrBrace($0) }
        var spliced = Data(capacity: payload.count + Self.wireBytes(field: field, bytes: bytes.count))
        spliced.append(head)
        spliced.append(contentsOf: Array((isEmptyObject ? "\"" : ",\"").utf8))
        spliced.append(contentsOf: Array(field.utf8))
        spliced.append(contentsOf: Array("\":\"".utf8))
        spliced.append(bytes.base64EncodedData())
        spliced.append(contentsOf: Array("\"}".utf8))
        return spliced
    }

    private static func isSpaceOrBrace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "{") || byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
    }

    // MARK: Deleting

    /// Unlinks the files of deleted records (step 3) and forgets their names. Returns how
    /// many files went.
    @discardableResult
    func emptyTrash(_ writer: some DatabaseWriter) throws -> Int {
        let names = try writer.read { db in try String.fetchAll(db, sql: "SELECT file FROM attachment_trash") }
        guard !names.isEmpty else { return 0 }
        for name in names where !name.contains("/") {
            unlink(path(name))
        }
        try writer.write { db in
            let forget = try db.cachedStatement(sql: "DELETE FROM attachment_trash WHERE file = ?")
            for name in names { try forget.execute(arguments: [name]) }
        }
        return names.count
    }

    /// What `sweep` found.
    struct SweepReport: Sendable, Equatable {
        /// Files no record names (a crash between placing and commit, or before an unlink).
        var strays = 0
        /// Records whose file is gone (deleted by hand).
        var missing: [Int64] = []
    }

    /// At the daemon's start, before any capture: empties the trash, removes files no
    /// record names, and reports records whose file is missing.
    func sweep(_ writer: some DatabaseWriter) throws -> SweepReport {
        var report = SweepReport()
        try emptyTrash(writer)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let known = try writer.read { db -> [Int64: String] in
            var known: [Int64: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT seq, file FROM attachments") {
                known[row["seq"]] = row["file"]
            }
            return known
        }
        let named = Set(known.values)
        for name in names where !named.contains(name) {
            unlink(path(name))
            report.strays += 1
        }
        let present = Set(names)
        report.missing = known.filter { !present.contains($0.value) }.map(\.key).sorted()
        return report
    }

    /// Bytes of attachment files (of records still in the queue).
    func totalBytes(_ reader: some DatabaseReader) -> Int64 {
        (try? reader.read { db in try Int64.fetchOne(db, sql: "SELECT coalesce(sum(bytes), 0) FROM attachments") ?? 0 }) ?? 0
    }
}

extension AgentDatabase {
    /// The directory of the attachment files (`<database>.attachments`).
    public var attachmentDirectory: String { attachments.directory }
}
