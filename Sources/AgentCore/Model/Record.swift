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

    public init(id: UUID = UUID(), stream: StreamName, capturedAt: Date, payload: Data) {
        self.id = id
        self.stream = stream
        self.capturedAt = capturedAt
        self.payload = payload
    }

    /// Encodes `fields` as the payload (keys sorted, so a payload is stable for tests).
    /// The record's `id` is added to the object.
    public init(id: UUID = UUID(), stream: StreamName, capturedAt: Date, fields: [String: any Sendable]) throws {
        var object = fields
        object["id"] = id.uuidString.lowercased()
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        self.init(id: id, stream: stream, capturedAt: capturedAt, payload: data)
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
