import AgentCore
import Foundation

/// Everything the uploader reads from and writes to: the queue, plus the bookkeeping
/// that `status` reads. `RecordQueue` (`database.recordQueue`) is the one implementation.
public protocol UploadStore: UploadQueue {
    /// Records and payload bytes pending in `stream` (for progress).
    func pendingTotals(stream: StreamName) throws -> (records: Int, bytes: Int64)
    func recordUploadResult(stream: StreamName, success: Bool, result: String, code: AgentErrorCode?,
                            records: Int, bytes: Int) throws
    /// The server stored the batch: the records delivered and a successful `recordUploadResult`
    /// in one transaction.
    func markDelivered(_ seqs: [Int64], stream: StreamName, result: String, bytes: Int) throws
    func setState(_ key: String, _ value: String?) throws
    func state(_ key: String) throws -> String?
}

extension RecordQueue: UploadStore {
    public func setState(_ key: String, _ value: String?) throws { try database.agentState.set(key, value) }

    public func state(_ key: String) throws -> String? { try database.agentState.value(key) }

    public func pendingTotals(stream: StreamName) throws -> (records: Int, bytes: Int64) {
        let pending = try counts().first { $0.stream == stream && $0.status == .pending }
        let held = try heldTotals(stream: stream) // waiting for a true time: not sent now
        return (max(0, (pending?.records ?? 0) - held.records), max(0, (pending?.bytes ?? 0) - held.bytes))
    }
}
