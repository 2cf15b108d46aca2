import AgentCore
import Foundation

/// How the records of a batch the server refused (in part or whole) are sent again,
/// from what its answer proves stored and which records it names. The aim: no record
/// the answer proves stored is sent again, and once a refusal is seen no good record
/// goes into a batch that is refused again (a server that keeps the records before the
/// bad one, as Ariata does, then keeps nothing more). docs/upload.md has the table.
enum RefusalPlan: Equatable {
    /// Nothing named: halves, until the refused records stand alone.
    case halves
    /// Nothing proven stored: each named record alone first, then the others in one batch.
    case namedAloneFirst(named: [QueuedRecord], others: [QueuedRecord])
    /// The answer proves the records it does not name stored: they are marked delivered
    /// and never sent again; each named record goes alone.
    case storedExceptNamed(stored: [QueuedRecord], named: [QueuedRecord])
    /// Some records stored, the answer does not say which: every record goes alone, so
    /// each one's fate is known and a bad one never again shares a batch with good ones.
    case eachAlone

    /// An answer that accepted none of `batch` (200 with accepted 0, 400, 413, 422).
    static func refused(_ batch: [QueuedRecord], named: Set<UUID>) -> RefusalPlan {
        let (inBatch, others) = split(batch, by: named)
        return inBatch.isEmpty ? .halves : .namedAloneFirst(named: inBatch, others: others)
    }

    /// A 200 that accepted some of `batch` and rejected others. Only an answer whose
    /// counts cover the batch and whose names are exactly the rejected records proves
    /// which were stored.
    static func partlyAccepted(_ batch: [QueuedRecord], accepted: Int, rejected: Int, named: Set<UUID>) -> RefusalPlan {
        let (inBatch, others) = split(batch, by: named)
        guard accepted + rejected == batch.count, named.count == rejected, inBatch.count == rejected else {
            return .eachAlone
        }
        return .storedExceptNamed(stored: others, named: inBatch)
    }

    private static func split(_ batch: [QueuedRecord], by named: Set<UUID>) -> (named: [QueuedRecord], others: [QueuedRecord]) {
        guard !named.isEmpty else { return ([], batch) }
        var inBatch: [QueuedRecord] = [], others: [QueuedRecord] = []
        for record in batch {
            if named.contains(record.id) { inBatch.append(record) } else { others.append(record) }
        }
        return (inBatch, others)
    }
}
