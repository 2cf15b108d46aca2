import AgentCore
import Foundation
import Synchronization

/// Fault injection: a real queue that refuses writes while `refusing` is set (from the
/// start), with the error a full disk gives, and writes through once it is cleared.
public final class RefusingQueue: RecordSink, Sendable {
    public let queue: AgentDatabase
    private let refusing = Mutex(true)

    public init(_ queue: AgentDatabase) { self.queue = queue }

    public func setRefusing(_ value: Bool) { refusing.withLock { $0 = value } }

    public func enqueue(_ record: NewRecord) throws { try enqueue([record], anchor: nil) }

    public func enqueue(_ records: [NewRecord], anchor: SourceAnchor?) throws {
        if refusing.withLock({ $0 }) { throw QueueError.storageFull(path: queue.path) }
        try queue.enqueue(records, anchor: anchor)
    }

    /// A health source's stored anchor (`HealthRecordQueue`, which the capture tests
    /// declare it to be).
    public func anchor(for source: String) throws -> SourceAnchor? { try queue.anchor(for: source) }
}
