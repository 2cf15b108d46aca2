import AgentCore
import Foundation
import Platform
import Synchronization

/// One place health samples come from. A new kind of source is one new type conforming
/// to this (and one line in `HealthSourceFactory`).
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

/// What `status` shows of a source: its health and its counters since the agent started.
public struct HealthSourceStatus: Sendable, Equatable {
    public var name: String
    public var kind: HealthSourceConfig.Kind
    /// Unhealthy ("starting") until the source has its file or port open.
    public var health: Liveness = .unhealthy(reason: "starting")
    /// Complete lines read (blank and header lines included).
    public var linesRead = 0
    /// Samples committed to the queue.
    public var samplesWritten = 0
    /// Lines that could not be read (each logged with its place, rate-limited).
    public var malformedLines = 0
    /// Samples read but refused by the contract's rules (impossible values, bad times, units).
    public var rejectedSamples = 0
    /// Samples of metrics the server did not enable (its `enabled_metrics`): not captured.
    public var serverSkippedSamples = 0
    /// Samples of the first import older than the backfill window.
    public var skippedOld = 0
    /// Times the source's thread woke up (the idle cost: 0 a minute when nothing is written).
    public var wakeups = 0
    /// The first import of an existing file, while and after it runs.
    public var backfill: BackfillProgress?
    /// A file source has read its file to the end at least once since it started.
    public var caughtUp = false

    // Bluetooth LE sources (docs/streams/health.md#bluetooth-le-sensors).
    /// The sensor's battery in percent, as BlueZ last reported it.
    public var battery: Int?
    /// Since when the sensor has been out of reach (nil while connected).
    public var disconnectedSince: Date?
    /// The last time the sensor was out of reach and came back.
    public var lastGap: Gap?
    /// Connections made since the agent started (1 + reconnections).
    public var connections = 0
    /// Variability windows without enough clean beats: nothing was sent for them.
    public var hrvWindowsDropped = 0
    /// Notifications the sensor sent while reporting no skin contact (left out).
    public var noContactReadings = 0

    public struct Gap: Sendable, Equatable {
        public var from: Date
        public var to: Date
        public var seconds: Double { to.timeIntervalSince(from) }
    }

    public init(name: String, kind: HealthSourceConfig.Kind) {
        self.name = name
        self.kind = kind
    }
}

/// Progress of the first import of an existing file (the last `backfill_days` days).
public struct BackfillProgress: Sendable, Equatable {
    public var bytesDone: Int64
    public var bytesTotal: Int64
    public var samples: Int

    public var fraction: Double { bytesTotal > 0 ? min(1, Double(bytesDone) / Double(bytesTotal)) : 1 }
    public var finished: Bool { bytesDone >= bytesTotal }
}

/// A source's status behind a lock: the source's thread writes, any thread reads.
final class HealthSourceCounters: Sendable {
    private let value: Mutex<HealthSourceStatus>

    init(name: String, kind: HealthSourceConfig.Kind) {
        value = Mutex(HealthSourceStatus(name: name, kind: kind))
    }

    func update(_ body: (inout HealthSourceStatus) -> Void) {
        value.withLock { body(&$0) }
    }

    func snapshot() -> HealthSourceStatus { value.withLock { $0 } }
}
