/// The error codes shown to the user (contract, "Error codes shown to the user").
public enum AgentErrorCode: String, CaseIterable, Codable, Sendable {
    case networkTimeout = "E001"
    case invalidToken = "E002"
    case serverError = "E003"
    case storageFull = "E004"
    case permissionDenied = "E005"

    public var meaning: String {
        switch self {
        case .networkTimeout: return "network time-out"
        case .invalidToken: return "invalid device token"
        case .serverError: return "server error (5xx)"
        case .storageFull: return "storage full"
        case .permissionDenied: return "permission denied (device, file or serial port not readable)"
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
            return "free disk space under the database directory or raise [storage] min_free_mb"
        case .permissionDenied:
            return "add the service user to the group that owns the device (audio, dialout) or fix the file's permissions"
        }
    }
}
