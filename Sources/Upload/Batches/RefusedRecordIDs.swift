import Foundation

/// The records an answer that refuses records names: the `id` of each entry under its
/// `errors` (`[{"id": …, "error": …}]`, as the reference receiver answers). Entries without
/// a readable id are left out; a name only ever makes the agent send that record alone.
enum RefusedRecordIDs {
    static func named(in body: Data) -> Set<UUID> {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let errors = object["errors"] as? [Any] else { return [] }
        let ids = errors.compactMap { ($0 as? [String: Any])?["id"] as? String }
        return Set(ids.compactMap(UUID.init(uuidString:)))
    }
}
