import Foundation

public enum QueueError: Error, CustomStringConvertible, Equatable {
    case schemaTooNew(found: Int, known: Int)
    case cannotOpen(path: String, reason: String)
    case storageFull(path: String)

    public var description: String {
        switch self {
        case .schemaTooNew(let found, let known):
            return "the database schema is version \(found) but this ariata-agent knows only up to \(known): install the newer ariata-agent that wrote it"
        case .cannotOpen(let path, let reason):
            return "cannot open the queue database \(path): \(reason)"
        case .storageFull(let path):
            return "\(AgentErrorCode.storageFull.rawValue) storage full: cannot write to \(path); \(AgentErrorCode.storageFull.hint)"
        }
    }
}
