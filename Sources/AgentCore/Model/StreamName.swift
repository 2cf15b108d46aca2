/// The three streams. The raw value is the agent's own name for a stream: in the config,
/// the logs, `status`, the queue's `stream` column and the commands (`pause health`).
/// `wireName` is the name the ingest contract gives it, the only one sent to a server.
public enum StreamName: String, CaseIterable, Codable, Sendable, Comparable {
    case location
    case microphone
    case health

    /// The stream's name in a request body (`"stream"`): the Ariata server looks a batch's
    /// stream up by this name among the device connection's push streams (`location`,
    /// `microphone`, `healthkit`) and refuses every record of a stream it does not know.
    public var wireName: String {
        switch self {
        case .location: return "location"
        case .microphone: return "microphone"
        case .health: return "healthkit"
        }
    }

    public static func < (lhs: StreamName, rhs: StreamName) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}
