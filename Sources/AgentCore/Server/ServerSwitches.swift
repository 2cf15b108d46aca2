import Foundation

/// The server's stream switches and settings, as an Ariata server's
/// `POST /api/devices/verify` last answered them: a person who switches a stream off in
/// the server's web UI expects the device to stop capturing it. The answer lists only the
/// streams switched on: a stream it leaves out is off, and before the person switched any
/// on (`configuration_complete: false`, right after pairing) nothing is captured. Kept in the database
/// (`AgentStateKey.serverSwitches`) so that a restart without network keeps them, and so
/// that `status` can show them. The local configuration is a veto: a stream off there
/// stays off whatever the server says (docs/upload.md#the-servers-stream-switches).
public struct ServerSwitches: Codable, Sendable, Equatable {
    /// What the server says of one stream (by the agent's stream name).
    public struct Stream: Codable, Sendable, Equatable {
        public var enabled: Bool
        /// location: `update_interval_seconds`, when 5 or more.
        public var updateIntervalSeconds: Int?
        /// healthkit: `enabled_metrics`, the metric names the server wants.
        public var enabledMetrics: [String]?

        public init(enabled: Bool, updateIntervalSeconds: Int? = nil, enabledMetrics: [String]? = nil) {
            self.enabled = enabled
            self.updateIntervalSeconds = updateIntervalSeconds
            self.enabledMetrics = enabledMetrics
        }
    }

    /// The shortest location interval a server may set (the contract's floor).
    public static let minimumInterval = 5

    /// When the server last answered with its switches, or that it has none.
    public var fetchedAt: Date?
    /// False when the server has no switches (`404`/`405`, a Virtues server): the local
    /// configuration alone decides.
    public var supported = true
    /// By `StreamName.rawValue`: the streams the answer listed. A stream it leaves out is
    /// off, as the server means it.
    public var streams: [String: Stream] = [:]
    /// The answer's `configuration_complete`: false until the person switched a stream on
    /// in the web UI (nil in switches kept before it was read: complete).
    public var configurationComplete: Bool?
    /// The last time the agent asked, and what went wrong then (nil when it was answered).
    public var lastAttemptAt: Date?
    public var lastProblem: String?
    /// The server that answered (`[server] endpoint`): another server's switches do not apply.
    public var endpoint: String?

    public init(fetchedAt: Date? = nil, supported: Bool = true, streams: [String: Stream] = [:]) {
        self.fetchedAt = fetchedAt
        self.supported = supported
        self.streams = streams
    }

    /// The answer's `enabled_streams` read into switches. Config keys that do not map onto
    /// the agent are left out (the docs list them); wire names are the contract's.
    public static func parse(_ body: Data, at now: Date) throws -> ServerSwitches {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let list = object["enabled_streams"] as? [Any] else {
            throw ParseError(description: "the answer is not the server's stream settings (no enabled_streams list)")
        }
        var switches = ServerSwitches(fetchedAt: now)
        switches.configurationComplete = object["configuration_complete"] as? Bool ?? true
        for case let entry as [String: Any] in list {
            guard let wire = entry["stream_name"] as? String,
                  let name = StreamName.allCases.first(where: { $0.wireName == wire }) else { continue }
            // Listed means on (Ariata lists only those); an explicit false is read as off.
            var stream = Stream(enabled: entry["is_enabled"] as? Bool ?? true)
            let config = entry["config"] as? [String: Any] ?? [:]
            if name == .location, let seconds = (config["update_interval_seconds"] as? NSNumber)?.intValue,
               seconds >= minimumInterval {
                stream.updateIntervalSeconds = seconds
            }
            if name == .health, let metrics = config["enabled_metrics"] as? [Any] {
                stream.enabledMetrics = metrics.compactMap { $0 as? String }
            }
            switches.streams[name.rawValue] = stream
        }
        return switches
    }

    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Whether the person has switched any stream on at the server yet.
    public var isConfigurationComplete: Bool { !decides || configurationComplete ?? true }

    /// Whether the server's answer decides which streams run: it answered with switches.
    /// Before any answer (a first start without network) the configuration alone decides.
    public var decides: Bool { supported && fetchedAt != nil }

    /// Whether the server switched `stream` off: left out of the answer, listed as not
    /// enabled, or nothing switched on yet.
    public func switchedOff(_ stream: StreamName) -> Bool {
        decides && (!isConfigurationComplete || streams[stream.rawValue]?.enabled != true)
    }

    /// Why `stream` is off at the server, in the words the log and `status` use; nil when on.
    public func offReason(_ stream: StreamName) -> String? {
        guard switchedOff(stream) else { return nil }
        return isConfigurationComplete ? Self.switchedOffReason : Self.notConfiguredReason
    }

    public static let switchedOffReason = "the server switched it off (its web UI); it resumes when switched on there"
    public static let notConfiguredReason = "the server has no stream switched on for this device yet: turn them on in its web UI; "
        + "capture starts within a minute of that"

    /// The streams the server switched off.
    public var switchedOffStreams: Set<StreamName> { Set(StreamName.allCases.filter(switchedOff)) }

    /// `config` with what the server sets and the file does not: the location interval
    /// (unless the file sets one) and the health metrics the server wants.
    public func applied(to config: AgentConfig) -> AgentConfig {
        guard supported else { return config }
        var config = config
        if !config.location.intervalIsExplicit, let seconds = streams[StreamName.location.rawValue]?.updateIntervalSeconds {
            config.location.interval = min(seconds, 3_600)
            // Still the server's, not the file's: a later answer may change it again.
            config.location.intervalIsExplicit = false
        }
        config.health.serverMetrics = streams[StreamName.health.rawValue]?.enabledMetrics.map(Set.init)
        return config
    }

    /// What the answer decides, without when it was asked: two answers with equal
    /// decisions change nothing.
    public var decisions: ServerSwitches {
        var decisions = ServerSwitches(fetchedAt: decides ? Date(timeIntervalSince1970: 0) : nil, supported: supported,
                                       streams: decides ? streams : [:])
        decisions.configurationComplete = decides ? isConfigurationComplete : nil
        return decisions
    }

    // MARK: Storage

    /// The switches kept in `database` for the server at `endpoint`, nil when it never
    /// answered (a device moved to another server does not keep the old one's switches).
    public static func load(from database: AgentDatabase, endpoint: String) -> ServerSwitches? {
        database.agentState.json(AgentStateKey.serverSwitches, as: ServerSwitches.self).flatMap { $0.endpoint == endpoint ? $0 : nil }
    }

    public func save(to database: AgentDatabase) throws {
        try database.agentState.setJSON(AgentStateKey.serverSwitches, self)
    }
}
