import Foundation

/// What the running daemon knows of the connection's metering, as it stores it for
/// `status` and the metrics (agent_state, JSON; docs/laptop.md#metered-networks).
public struct StoredMeteredState: Codable, Sendable, Equatable {
    /// Who says: "NetworkManager"; nil while nobody does (then `problem` says why).
    public var watchedBy: String?
    /// Whether the connection is metered; nil while not known (no NetworkManager, or it
    /// says "unknown"), which uploads treat as unmetered.
    public var metered: Bool?
    /// NetworkManager's own word: `yes`, `guess-yes`, `no`, `guess-no`, `unknown`.
    public var value: String?
    /// Why metering is not known, with what follows from it.
    public var problem: String?
    /// Since when this has been so.
    public var since: Date
    /// The streams whose scheduled uploads are deferred now (`[upload] on_metered`).
    public var deferredStreams: [String]

    // Stored under the name it had before (`heldStreams`), so a status of a newer version
    // reads what a running older daemon stored.
    private enum CodingKeys: String, CodingKey {
        case watchedBy, metered, value, problem, since, deferredStreams = "heldStreams"
    }

    public init(watchedBy: String?, metered: Bool?, value: String?, problem: String?, since: Date, deferredStreams: [String]) {
        self.watchedBy = watchedBy
        self.metered = metered
        self.value = value
        self.problem = problem
        self.since = since
        self.deferredStreams = deferredStreams
    }

    /// The state as `status` reads it back.
    public static func load(from database: AgentDatabase) -> StoredMeteredState? {
        database.agentState.json(AgentStateKey.networkMetered, as: StoredMeteredState.self)
    }

    /// Stores it (nil removes it).
    public static func store(_ state: StoredMeteredState?, in database: AgentDatabase) throws {
        guard let state else { return try database.agentState.set(AgentStateKey.networkMetered, nil) }
        try database.agentState.setJSON(AgentStateKey.networkMetered, state)
    }
}
