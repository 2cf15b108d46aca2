import Foundation

public enum QueueError: Error, CustomStringConvertible, Equatable {
    case schemaTooNew(found: Int, known: Int)
    case cannotOpen(path: String, reason: String)
    case storageFull(path: String)
    case cannotWriteAttachment(path: String, action: String, reason: String)

    /// Whether `error` is the queue refusing a write for lack of space (E004): the one test
    /// every writer (audio chunks, health sources) uses to report it.
    public static func isStorageFull(_ error: any Error) -> Bool {
        if case .storageFull = error as? QueueError { return true }
        return false
    }

    public var description: String {
        switch self {
        case .schemaTooNew(let found, let known):
            return "the database schema is version \(found) but this ariata-agent knows only up to \(known): install the newer ariata-agent that wrote it"
        case .cannotOpen(let path, let reason):
            return "cannot open the queue database \(path): \(reason)"
        case .cannotWriteAttachment(let path, let action, let reason):
            return "cannot \(action) \(path): \(reason); check that the directory of [storage] database is writable by the service user"
        case .storageFull(let path):
            return "\(AgentErrorCode.storageFull.rawValue) storage full: cannot write to \(path); \(AgentErrorCode.storageFull.hint)"
        }
    }
}
