import Foundation

/// A record as a capture hands it to the queue: the payload is the record's JSON object
/// exactly as it will stand in the request's `records` array, so the uploader never
/// decodes or re-encodes it.
public struct NewRecord: Sendable, Equatable {
    public var id: UUID
    public var stream: StreamName
    public var capturedAt: Date
    public var payload: Data
    /// Set when the capture time came from a system clock not yet known to be right: the
    /// queue holds the record until its time is corrected (see ClockCorrection).
    public var provisional: ProvisionalTime?
    /// Bytes kept beside the payload, in a file of their own, and added to the JSON object
    /// (base64, under `attachment.field`) only when it is read back: a chunk's audio.
    public var attachment: RecordAttachment?

    public init(id: UUID = RecordID.make(), stream: StreamName, capturedAt: Date, payload: Data, attachment: RecordAttachment? = nil) {
        self.id = id
        self.stream = stream
        self.capturedAt = capturedAt
        self.payload = payload
        self.attachment = attachment
    }

    /// Encodes `fields` as the payload (`RecordJSON`: keys sorted, so a payload is stable
    /// for tests). The record's `id` is added to the object.
    public init(id: UUID = RecordID.make(), stream: StreamName, capturedAt: Date, fields: [String: any Sendable]) throws {
        var object = fields
        object["id"] = id.uuidString.lowercased()
        self.init(id: id, stream: stream, capturedAt: capturedAt, payload: try RecordJSON.data(object))
    }
}

/// Binary data of a record that the queue keeps as a file of its own (see `AttachmentStore`)
/// rather than as base64 text in the payload. Read back, the record's payload holds it
/// base64-encoded under `field`, exactly as the ingest contract wants it.
public struct RecordAttachment: Sendable, Equatable {
    /// The key of the payload's JSON object that carries the data (base64).
    public var field: String
    public var data: Data
    /// The file name's extension in the store ("ogg").
    public var fileExtension: String
    /// A complete file that already holds exactly `data` (the chunk's audio journal, on the
    /// same file system): the queue links it into its store instead of writing the bytes
    /// again. nil, or a file whose size differs, and the queue writes `data`.
    public var existingFile: String?

    public init(field: String, data: Data, fileExtension: String, existingFile: String? = nil) {
        self.field = field
        self.data = data
        self.fileExtension = fileExtension
        self.existingFile = existingFile
    }
}

/// Where a record stands in its life in the queue.
public enum RecordStatus: String, CaseIterable, Codable, Sendable {
    case pending
    case uploaded
    case failed
}

/// A record read back from the queue.
public struct QueuedRecord: Sendable, Equatable {
    /// The queue's order: an autoincrement id, never reused.
    public var seq: Int64
    public var id: UUID
    public var stream: StreamName
    public var capturedAt: Date
    public var payload: Data
    public var status: RecordStatus
    public var uploadAttempts: Int
    public var lastAttemptAt: Date?
    public var lastError: String?

    public init(seq: Int64, id: UUID, stream: StreamName, capturedAt: Date, payload: Data,
                status: RecordStatus, uploadAttempts: Int, lastAttemptAt: Date?, lastError: String?) {
        self.seq = seq
        self.id = id
        self.stream = stream
        self.capturedAt = capturedAt
        self.payload = payload
        self.status = status
        self.uploadAttempts = uploadAttempts
        self.lastAttemptAt = lastAttemptAt
        self.lastError = lastError
    }
}
