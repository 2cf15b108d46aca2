import AgentCore
import Foundation
import Synchronization

/// Fault injection: a real queue that refuses writes while `refusing` is set (from the
/// start), with the error a full disk gives, and writes through once it is cleared.
public final class RefusingQueue: RecordSink, Sendable {
    public let database: AgentDatabase
    private let refusing = Mutex(true)

    public init(_ database: AgentDatabase) { self.database = database }

    public func setRefusing(_ value: Bool) { refusing.withLock { $0 = value } }

    public func enqueue(_ record: NewRecord) throws { try enqueue([record], anchor: nil) }

    public func enqueue(_ records: [NewRecord], anchor: SourceAnchor?) throws {
        if refusing.withLock({ $0 }) { throw QueueError.storageFull(path: database.path) }
        try database.recordQueue.enqueue(records, anchor: anchor)
    }

    /// A health source's stored anchor (`HealthRecordQueue`, which the capture tests
    /// declare it to be).
    public func anchor(for source: String) throws -> SourceAnchor? { try database.recordQueue.anchor(for: source) }
}
