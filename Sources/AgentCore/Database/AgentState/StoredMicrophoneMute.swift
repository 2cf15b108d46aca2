import Foundation

/// The running daemon's word that the quiet hours or a muted place hold the microphone, as
/// it stores it for `status` (agent_state, JSON): which (`schedule`, `place`), since when,
/// and until when as far as known.
public struct StoredMicrophoneMute: Codable, Sendable, Equatable {
    public var mutedBy: String
    public var since: Date
    public var until: Date?

    public init(mutedBy: String, since: Date, until: Date?) {
        self.mutedBy = mutedBy
        self.since = since
        self.until = until
    }

    public static func load(from database: AgentDatabase) -> StoredMicrophoneMute? {
        guard let text = try? database.agentState.value(AgentStateKey.microphoneMuted) else { return nil }
        return try? JSONDecoder().decode(Self.self, from: Data(text.utf8))
    }
}
