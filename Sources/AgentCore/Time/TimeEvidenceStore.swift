import Foundation
import Synchronization

/// Keeps this boot's time evidence in the database (`time_evidence`), so the processes
/// that come after this one in the same boot (`sync`, the next daemon start) can correct
/// the records held in it. Written only when it is new or has moved: each write costs the
/// card a few pages, and a fix comes every second.
public final class TimeEvidenceStore: Sendable {
    /// Between two writes of the same boot and source, at least this much boot-clock time...
    static let refreshSeconds: Double = 300
    /// ...and a link that moved at least this much: a boot clock without NTP drifts from
    /// true time by up to ~0.1 s in 20 minutes, and a fix arrives with less jitter than that.
    static let movedSeconds: Double = 0.1

    private let database: AgentDatabase
    /// What the database holds for the boot, as far as this process knows; `read` false
    /// until it has looked.
    private let written = Mutex<(read: Bool, sample: TimeEvidence.Sample?)>((false, nil))

    public init(database: AgentDatabase) {
        self.database = database
    }

    /// Whether `candidate` is worth writing over `stored`.
    static func worthWriting(_ candidate: TimeEvidence.Sample, over stored: TimeEvidence.Sample?) -> Bool {
        guard let stored, stored.boot.bootID == candidate.boot.bootID, stored.source == candidate.source else { return true }
        return candidate.boot.seconds - stored.boot.seconds >= refreshSeconds
            && abs(candidate.offset - stored.offset) >= movedSeconds
    }

    /// Boot `bootID`'s evidence as stored.
    public func load(bootID: String) throws -> TimeEvidence.Sample? {
        let stored = try database.agentState.storedTimeEvidence(bootID: bootID)
        written.withLock { $0 = (true, stored) }
        return stored
    }

    /// Writes `sample` when it is worth it; true when it was written.
    @discardableResult
    public func keep(_ sample: TimeEvidence.Sample) throws -> Bool {
        let known = written.withLock { $0 }
        let stored = known.read ? known.sample : try load(bootID: sample.boot.bootID)
        guard Self.worthWriting(sample, over: stored) else { return false }
        try database.agentState.storeTimeEvidence(sample)
        written.withLock { $0 = (true, sample) }
        return true
    }
}
