import AgentCore
import Foundation
import Synchronization

/// What `status` shows of a source: its liveness and the counters every kind keeps since
/// the agent started, plus what only its kind counts (`kindStatus`).
public struct HealthSourceStatus: Sendable, Equatable {
    public var name: String
    public var kind: HealthSourceKindName
    /// Unhealthy ("starting") until the source has its file, port or sensor.
    public var liveness: Liveness = .unhealthy(reason: "starting")
    /// Complete lines read (blank and header lines included); a sensor's notifications.
    public var linesRead = 0
    /// Samples committed to the queue.
    public var samplesWritten = 0
    /// Lines that could not be read (each logged with its place, rate-limited).
    public var malformedLines = 0
    /// Samples read but refused by the contract's rules (impossible values, bad times, units).
    public var rejectedSamples = 0
    /// Samples of metrics the server did not enable (its `enabled_metrics`): not captured.
    public var serverSkippedSamples = 0
    /// Samples of a file's first import older than the backfill window (counted where
    /// lines are made samples, for every kind that reads lines).
    public var skippedOld = 0
    /// Times the source's thread woke up (the idle cost: 0 a minute when nothing is written).
    public var wakeups = 0
    /// What only this kind counts; nil for a kind that counts nothing more.
    public var kindStatus: (any HealthSourceKindStatus)?

    public init(name: String, kind: HealthSourceKindName, kindStatus: (any HealthSourceKindStatus)? = nil) {
        self.name = name
        self.kind = kind
        self.kindStatus = kindStatus
    }

    /// The kind's part, when it is of `type`.
    public func kindStatus<KindStatus: HealthSourceKindStatus>(_ type: KindStatus.Type) -> KindStatus? { kindStatus as? KindStatus }

    public static func == (a: Self, b: Self) -> Bool {
        a.name == b.name && a.kind == b.kind && a.liveness == b.liveness && a.linesRead == b.linesRead
            && a.samplesWritten == b.samplesWritten && a.malformedLines == b.malformedLines
            && a.rejectedSamples == b.rejectedSamples && a.serverSkippedSamples == b.serverSkippedSamples
            && a.skippedOld == b.skippedOld && a.wakeups == b.wakeups
            && (a.kindStatus.map { part in b.kindStatus.map { part.isEqual(to: $0) } ?? false } ?? (b.kindStatus == nil))
    }
}

/// What one kind of source counts beyond the common counters (a file's backfill, a
/// sensor's battery), kept with them in the source's `HealthSourceCounters`.
public protocol HealthSourceKindStatus: Sendable, Equatable {
    /// The source as a heart-rate sensor for `status` (its `sensors`), nil when it is none.
    func sensor(of status: HealthSourceStatus) -> SensorStatus?
}

extension HealthSourceKindStatus {
    public func sensor(of status: HealthSourceStatus) -> SensorStatus? { nil }

    func isEqual(to other: any HealthSourceKindStatus) -> Bool { (other as? Self) == self }
}

/// A source's status behind a lock: the source's thread writes, any thread reads.
final class HealthSourceCounters: Sendable {
    private let value: Mutex<HealthSourceStatus>

    init(name: String, kind: HealthSourceKindName, kindStatus: (any HealthSourceKindStatus)? = nil) {
        value = Mutex(HealthSourceStatus(name: name, kind: kind, kindStatus: kindStatus))
    }

    func update(_ body: (inout HealthSourceStatus) -> Void) {
        value.withLock { body(&$0) }
    }

    /// Updates the common counters and the kind's part together (one lock: a reader never
    /// sees a sensor connected and still gone). The source made these counters with its
    /// part, so the part is of `type`.
    func update<KindStatus: HealthSourceKindStatus>(_ type: KindStatus.Type,
                                                    _ body: (inout HealthSourceStatus, inout KindStatus) -> Void) {
        value.withLock { status in
            guard var part = status.kindStatus as? KindStatus else { return }
            body(&status, &part)
            status.kindStatus = part
        }
    }

    func snapshot() -> HealthSourceStatus { value.withLock { $0 } }
}
