/// The error codes shown to the user. E001–E005 are the contract's ("Error codes shown to
/// the user"); E006–E009 are the agent's own, for answers the contract calls "retry later"
/// but that a user must be able to tell apart from an outage.
public enum AgentErrorCode: String, CaseIterable, Codable, Sendable {
    case networkTimeout = "E001"
    case invalidToken = "E002"
    case serverError = "E003"
    case storageFull = "E004"
    case permissionDenied = "E005"
    case notIngestEndpoint = "E006"
    case streamRefused = "E007"
    case rateLimited = "E008"
    case attachmentMissing = "E009"

    public var meaning: String {
        switch self {
        case .networkTimeout: return "network time-out"
        case .invalidToken: return "invalid device token"
        case .serverError: return "server error (5xx)"
        case .storageFull: return "storage full"
        case .permissionDenied: return "permission denied (device, file or serial port not readable)"
        case .notIngestEndpoint: return "not the ingest endpoint (the answer does not prove the records were stored)"
        case .streamRefused: return "the server refuses every record of a stream"
        case .rateLimited: return "rate limited by the server (429)"
        case .attachmentMissing: return "a queued record's attachment file (a chunk's audio) is missing"
        }
    }

    /// What the user can do about it.
    public var hint: String {
        switch self {
        case .networkTimeout:
            return "check the network and that the endpoint answers; the agent retries by itself"
        case .invalidToken:
            return "get a new device token from the server and run 'ariata-agent onboard' again"
        case .serverError:
            return "the server failed; the agent retries with backoff, nothing is dropped"
        case .storageFull:
            return "free disk space under the database directory: below [storage] min_free_mb the agent keeps its backlog, stops the queue growing and has new captures replace the oldest records ('ariata-agent status' counts what went); above [storage] max_queue_mb it deletes the oldest records, audio first (docs/storage.md)"
        case .permissionDenied:
            return "add the service user to the group that owns the device (audio, dialout) or fix the file's permissions"
        case .notIngestEndpoint:
            return "check [server] endpoint and ingest_path; a captive portal or a login proxy may be answering in the server's place; nothing is marked sent until the server answers as the ingest endpoint"
        case .streamRefused:
            return "check the server version and its stream names (the agent sends location, microphone, healthkit); the records stay queued and are sent again"
        case .rateLimited:
            return "the server asked the agent to slow down; uploads wait for its Retry-After, nothing is dropped"
        case .attachmentMissing:
            return "something other than the agent deleted files under <database>.attachments/; the record is sent without its audio, the server refuses it and it is kept as failed; leave that directory to the agent"
        }
    }
}
