import AgentCore
import Platform

/// One place health samples come from: a running source of one kind (`HealthSourceKind`
/// makes it).
public protocol HealthSource: AnyObject, Sendable {
    var name: String { get }
    /// Reads until `stop` is woken, then commits what it has read and returns. Blocking:
    /// the caller gives it a thread of its own (a `NamedThread`, whose waker it is).
    func run(until stop: Waker)
    func status() -> HealthSourceStatus
}

/// Where a source writes: the queue, plus the anchors stored with its records.
public protocol HealthRecordQueue: RecordSink {
    func anchor(for source: String) throws -> SourceAnchor?
}

extension RecordQueue: HealthRecordQueue {}
