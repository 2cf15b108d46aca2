import Foundation

/// Which server the agent talks to, from its public `GET {endpoint}/health`: Ariata
/// answers `{status, version}`, its successor Virtues adds `commit`, `built_at` and
/// `min_ios_version`. The two generations pair devices differently (a code on Ariata, the
/// device's id on Virtues), and Virtues pays per audio chunk, so onboarding offers what
/// the generation supports and `status` names it (docs/install.md, "Which server").
public struct ServerIdentity: Codable, Sendable, Equatable {
    public enum Generation: String, Codable, Sendable {
        case ariata
        case virtues
        /// The Virtues box (0.1.x, from 2026-09): pairs with a 6-digit code, then takes
        /// requests only over iroh (the contract's section "The Virtues box").
        case box

        public var name: String {
            switch self {
            case .ariata: return "Ariata"
            case .virtues: return "Virtues"
            case .box: return "Virtues box"
            }
        }
    }

    /// nil: `/health` answered JSON that is neither generation's (a proxy, another app).
    public var generation: Generation?
    public var version: String?
    /// Virtues: the git commit the server was built from, and when (RFC 3339).
    public var commit: String?
    public var builtAt: String?
    /// When the server last answered, and which server (`[server] endpoint`) it was.
    public var fetchedAt: Date?
    public var endpoint: String?

    public init(generation: Generation?, version: String? = nil, commit: String? = nil, builtAt: String? = nil,
                fetchedAt: Date? = nil) {
        self.generation = generation
        self.version = version
        self.commit = commit
        self.builtAt = builtAt
        self.fetchedAt = fetchedAt
    }

    /// `/health`'s body read into an identity; throws when it is not a JSON object with a
    /// `status` (not either server's health route).
    public static func parse(_ body: Data, at now: Date) throws -> ServerIdentity {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any], object["status"] is String else {
            throw ParseError(description: "the answer is not a server's health report (no JSON status)")
        }
        func text(_ key: String) -> String? {
            guard let value = object[key] as? String, !value.isEmpty, value != "unknown" else { return nil }
            return String(value.prefix(80))
        }
        let virtues = ["commit", "built_at", "min_ios_version"].contains { object[$0] != nil }
        let generation: Generation? = virtues ? .virtues : text("version") != nil ? .ariata : nil
        return ServerIdentity(generation: generation, version: text("version"), commit: text("commit"),
                              builtAt: text("built_at"), fetchedAt: now)
    }

    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The header every answer of a Virtues box carries: `<version> <commit7>`.
    public static let boxBuildHeader = "x-virtues-box-build"

    /// The box named by its build header (`0.1.9 5e1c0de`); nil when the value is not
    /// a version and a commit.
    public static func box(buildHeader value: String, at now: Date) -> ServerIdentity? {
        let words = value.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard let version = words.first, !version.isEmpty, version.count <= 40 else { return nil }
        let commit = words.count > 1 ? String(words[1].prefix(40)) : nil
        return ServerIdentity(generation: .box, version: version, commit: commit, fetchedAt: now)
    }

    /// The commit as people quote it: its first 7 characters.
    public var shortCommit: String? { commit.map { String($0.prefix(7)) } }

    /// "Virtues 0.4.2, commit abc1234, built 2026-03-02T10:00:00Z" / "Ariata 0.1.0".
    public var name: String {
        var parts = [(generation?.name ?? "an unknown server") + (version.map { " \($0)" } ?? "")]
        if let shortCommit { parts.append("\(generation == .box ? "build" : "commit") \(shortCommit)") }
        if let builtAt { parts.append("built \(builtAt)") }
        return parts.joined(separator: ", ")
    }

    /// Linking by the device's id (`onboard --link`, `--source-id`): Virtues only.
    public var linksByDeviceID: Bool { generation == .virtues }

    /// The first release with the login wall in front of the device routes (2026-02).
    public static let loginWallSince = "2026-02-01"
    /// The login wall's refusal of every device route, and how the agent's messages name it.
    public static let loginWallBody = #"{"error":"Unauthorized"}"#
    public static let everyDeviceRefused = "the server refuses every device"

    /// A Virtues build from the login wall's release or later (by its build time): its
    /// `401 {"error":"Unauthorized"}` is that release's known problem.
    public var hasLoginWall: Bool {
        guard generation == .virtues, let builtAt else { return false }
        return builtAt >= Self.loginWallSince
    }

    // MARK: Chunk length

    /// The audio chunk length that fits this server: Virtues transcribes each chunk with
    /// one paid speech-model call and its own app sends 300 s chunks; Ariata's app sends 30 s
    /// (docs/streams/microphone.md, "Chunk length per server").
    public var proposedChunkSeconds: Int { generation == .virtues || generation == .box ? 300 : 30 }

    /// Why, in one line.
    public var chunkReason: String {
        switch generation {
        case .virtues: return "Virtues transcribes each chunk with one paid speech-model call; 300 s chunks, as its own app sends, cost a tenth of 30 s ones"
        case .box: return "the box transcribes each chunk with one paid speech-model call; 300 s chunks, as its own app sends, cost a tenth of 30 s ones"
        case .ariata: return "as Ariata's own app sends them"
        case nil: return "the contract's default"
        }
    }

    // MARK: Storage

    /// The identity kept in `database` for the server at `endpoint`, nil when that server
    /// never answered.
    public static func load(from database: AgentDatabase, endpoint: String) -> ServerIdentity? {
        database.agentState.json(AgentStateKey.serverIdentity, as: ServerIdentity.self).flatMap { $0.endpoint == endpoint ? $0 : nil }
    }

    public func save(to database: AgentDatabase) throws {
        try database.agentState.setJSON(AgentStateKey.serverIdentity, self)
    }
}
