import Foundation

/// How the daemon last reached its Virtues box, for `status`: directly on the box's
/// network or through its relay, and when the box last answered (any answer: the box
/// was there). Kept in the queue database (`AgentStateKey.boxReach`).
public struct BoxReach: Codable, Sendable, Equatable {
    /// `direct`, `relay`, or what the bridge said (`unknown`).
    public var path: String
    public var answeredAt: Date

    public init(path: String, answeredAt: Date) {
        self.path = path
        self.answeredAt = answeredAt
    }

    /// For people: "directly on the LAN", "through its relay".
    public var pathDescription: String {
        switch path {
        case "direct": return "directly on the LAN"
        case "relay": return "through its relay"
        default: return "by a path the bridge did not name"
        }
    }

    public static func load(from database: AgentDatabase) -> BoxReach? {
        database.agentState.json(AgentStateKey.boxReach, as: BoxReach.self)
    }
}
