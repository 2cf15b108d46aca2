import AgentCore
import Foundation

/// The microphone stream as files: one Ogg Opus file per chunk (`opusdec`, `ffplay`,
/// any browser plays them), named by the chunk's start in UTC, `2026-05-01T180000.000Z.opus`
/// (no colons: they are not allowed on FAT and exFAT, where such files often go).
public struct AudioExport {
    public init() {}

    public struct Written: Sendable, Equatable {
        public var files = 0
        public var bytes: Int64 = 0
        public var skipped = 0
    }

    public func write(from database: AgentDatabase, since: Date?, until: Date?, directory: String) throws -> Written {
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw ExportError("cannot make \(directory): \(error); give a directory you can write to")
            }
        } else if !isDirectory.boolValue {
            throw ExportError("\(directory) is a file: --out needs a directory for the microphone's .opus files")
        }
        var written = Written()
        var used = Set<String>()
        try database.recordQueue.forEachRecord(stream: .microphone, since: since, until: until) { record in
            guard let fields = ExportPayload.object(record.payload),
                  let base64 = fields["audio_data"] as? String,
                  let audio = Data(base64Encoded: base64) else {
                written.skipped += 1
                return
            }
            let name = Self.fileName(start: record.capturedAt, id: record.id, taken: used)
            used.insert(name)
            let path = "\(directory)/\(name)"
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw ExportError("cannot write \(path): \(String(cString: strerror(errno)))")
            }
            let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            try handle.write(contentsOf: audio)
            try handle.close()
            written.files += 1
            written.bytes += Int64(audio.count)
        }
        return written
    }

    /// `2026-05-01T180000.000Z.opus`; a second chunk with the same start in this export
    /// (one recovered from the journal after a crash, say) gets the record id's first 8
    /// characters added rather than overwriting the first. Exporting again overwrites.
    static func fileName(start: Date, id: UUID, taken: Set<String>) -> String {
        let stamp = RFC3339.string(from: start).replacingOccurrences(of: ":", with: "")
        let plain = "\(stamp).opus"
        if !taken.contains(plain) { return plain }
        return "\(stamp)-\(id.uuidString.prefix(8).lowercased()).opus"
    }
}
