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
    /// Which rule decided: `metered_networks`, `device` or `networkmanager`; nil from a
    /// daemon older than the rules.
    public var decidedBy: String?
    /// The rule's words: "listed in metered_networks (Ana's iPhone)".
    public var decision: String?
    /// The connection under the default route (its id), its Wi-Fi SSID, its devices, and
    /// the VPN looked through to find it.
    public var connection: String?
    public var ssid: String?
    public var devices: [String]?
    public var vpn: String?

    // Stored under the name it had before (`heldStreams`), so a status of a newer version
    // reads what a running older daemon stored.
    private enum CodingKeys: String, CodingKey {
        case watchedBy, metered, value, problem, since, deferredStreams = "heldStreams", decidedBy, decision, connection, ssid,
             devices, vpn
    }

    public init(watchedBy: String?, metered: Bool?, value: String?, problem: String?, since: Date, deferredStreams: [String],
                decidedBy: String? = nil, decision: String? = nil, connection: String? = nil, ssid: String? = nil,
                devices: [String]? = nil, vpn: String? = nil) {
        self.watchedBy = watchedBy
        self.metered = metered
        self.value = value
        self.problem = problem
        self.since = since
        self.deferredStreams = deferredStreams
        self.decidedBy = decidedBy
        self.decision = decision
        self.connection = connection
        self.ssid = ssid
        self.devices = devices
        self.vpn = vpn
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
