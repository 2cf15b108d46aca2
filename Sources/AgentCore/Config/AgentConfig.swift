import Foundation
import TOMLKit

/// The whole configuration: one TOML file, every key with a default.
public struct AgentConfig: Sendable, Equatable {
    public static let defaultPath = "/etc/ariata/agent.toml"

    /// The file this was read from, for messages.
    public var file: String = AgentConfig.defaultPath
    public var server = ServerConfig()
    /// A Virtues box's pairing (empty for the older servers).
    public var box = BoxConfig()
    public var storage = StorageConfig()
    public var upload = UploadConfig()
    public var location = LocationConfig()
    public var microphone = MicrophoneConfig()
    public var health = HealthConfig()
    public var daemon = DaemonConfig()
    public var metrics = MetricsConfig()
    public var power = PowerConfig()
    public var notify = NotifyConfig()
    public var log = LogConfig()

    /// `trace`, `debug`, `info`, `notice`, `warning`, `error` or `critical`.
    public var logLevel: String {
        get { log.level }
        set { log.level = newValue }
    }

    public init() {}

    /// Every key the file may hold, dotted (`server.endpoint`, `location.exclude.radius`):
    /// what the reader knows and the writer writes.
    public static var keyNames: [String] { leafNames(prefix: "") }

    /// Parses TOML text; `file` names it in errors.
    public init(toml text: String, file: String) throws {
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigError(file: file, key: nil,
                              message: "line \(error.source.begin.line), column \(error.source.begin.column): \(error.description)")
        }
        self = try AgentConfig(reading: ConfigSection(file: file, path: "", table: table))
        self.file = file
    }

    /// Reads the file at `path` (a missing file gives the defaults when `missingOK`),
    /// then applies the environment overrides `ARIATA_ENDPOINT`, `ARIATA_TOKEN` and
    /// `ARIATA_DATABASE`.
    public static func load(path: String = defaultPath, missingOK: Bool = false,
                            environment: [String: String] = ProcessInfo.processInfo.environment) throws -> AgentConfig {
        var config: AgentConfig
        if FileManager.default.fileExists(atPath: path) {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigError(file: path, key: nil, message: "cannot read the file: check its permissions (it is 0600, readable by the service user and root)")
            }
            guard let text = String(data: data, encoding: .utf8) else {
                throw ConfigError(file: path, key: nil, message: "the file is not UTF-8 text")
            }
            config = try AgentConfig(toml: text, file: path)
        } else if missingOK {
            config = AgentConfig()
            config.file = path
        } else {
            throw ConfigError(file: path, key: nil, message: "no such file: run 'ariata-agent onboard' to write it, or pass --config")
        }
        config.applyEnvironment(environment)
        return config
    }

    /// True when there is something to upload to: a token for the older servers, or a
    /// box's pairing.
    public var isOnboarded: Bool { !server.endpoint.isEmpty && (!server.token.isEmpty || box.isPaired) }

    /// Whether the config turns `stream` on.
    public func isEnabled(_ stream: StreamName) -> Bool {
        switch stream {
        case .location: return location.enabled
        case .microphone: return microphone.enabled
        case .health: return health.enabled
        }
    }

    public mutating func setEnabled(_ stream: StreamName, _ enabled: Bool) {
        switch stream {
        case .location: location.enabled = enabled
        case .microphone: microphone.enabled = enabled
        case .health: health.enabled = enabled
        }
    }

    public mutating func applyEnvironment(_ environment: [String: String]) {
        if let endpoint = environment["ARIATA_ENDPOINT"], !endpoint.isEmpty { server.endpoint = endpoint }
        if let token = environment["ARIATA_TOKEN"], !token.isEmpty { server.token = Secret(token) }
        if let database = environment["ARIATA_DATABASE"], !database.isEmpty { storage.database = database }
    }
}

/// The file's top level: one key per section.
extension AgentConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.section("server", \.server),
         // Only a device paired with a box has it.
         .section("box", \.box, omittedAtDefaults: true),
         .section("storage", \.storage),
         .section("upload", \.upload),
         .section("location", \.location),
         .section("microphone", \.microphone),
         .section("health", \.health),
         .section("daemon", \.daemon),
         .section("metrics", \.metrics),
         // A file that never mentioned [power] keeps not mentioning it.
         .section("power", \.power, omittedAtDefaults: true),
         .section("notify", \.notify),
         .section("log", \.log)]
    }
}
