/// `[health]` and its `[[health.source]]` entries.
public struct HealthConfig: Sendable, Equatable {
    public var enabled: Bool = false
    /// Samples read are committed at least this often (seconds).
    public var commitInterval: Int = 300
    public var sources: [HealthSourceConfig] = []

    public init() {}

    init(_ s: ConfigSection) throws {
        enabled = try s.bool("enabled", default: enabled)
        commitInterval = try s.int("commit_interval", default: commitInterval, range: 1...3_600, unit: "seconds")
        sources = try s.tables("source").map(HealthSourceConfig.init)
        try s.finish()
        if enabled && sources.isEmpty {
            throw ConfigError(file: s.file, key: s.keyPath("source"),
                              message: "health is enabled but no [[health.source]] is configured: add one or set enabled = false")
        }
    }
}

/// One health source: a file that grows, or a serial port.
public struct HealthSourceConfig: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable { case file, serial }
    public enum Format: String, Sendable { case jsonl, csv, keyvalue }

    public var kind: Kind
    public var path: String
    public var format: Format
    /// Serial only.
    public var baud: Int = 9_600
    /// A name for `metadata.source`; the path when not given.
    public var name: String
    /// File only: on first start, import samples of the last N days already in the file.
    public var backfillDays: Int = 7

    public init(kind: Kind, path: String, format: Format, name: String? = nil) {
        self.kind = kind
        self.path = path
        self.format = format
        self.name = name ?? path
    }

    init(_ s: ConfigSection) throws {
        guard let kind = Kind(rawValue: try s.choice("kind", default: Kind.file.rawValue, allowed: Kind.allCases.map(\.rawValue))) else {
            throw s.error("kind", "unknown kind")
        }
        self.kind = kind
        guard let path = try s.optionalString("path") else {
            throw s.error("path", "missing: give the file or serial device to read, e.g. path = \"/var/log/hr.jsonl\"")
        }
        self.path = path
        guard let format = Format(rawValue: try s.choice("format", default: "jsonl", allowed: ["jsonl", "csv", "keyvalue"])) else {
            throw s.error("format", "unknown format")
        }
        self.format = format
        baud = try s.int("baud", default: baud, range: 50...4_000_000)
        name = try s.optionalString("name") ?? path
        backfillDays = try s.int("backfill_days", default: backfillDays, range: 0...3_650, unit: "days")
        try s.finish()
    }
}
