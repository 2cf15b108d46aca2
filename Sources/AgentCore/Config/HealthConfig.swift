/// `[health]` and its `[[health.source]]` entries.
public struct HealthConfig: Sendable, Equatable {
    public var enabled: Bool = false
    /// Samples read are committed at least this often (seconds).
    public var commitInterval: Int = 300
    public var sources: [HealthSourceConfig] = []
    /// The metrics the server lets the device capture (its `enabled_metrics`), nil for all.
    /// Not a key of the file: the daemon sets it from the server's answer
    /// (docs/upload.md#the-servers-stream-switches).
    public var serverMetrics: Set<String>?

    public init() {}

}

extension HealthConfig: ConfigTable {
    static var defaults: Self { Self() }
    static var keys: [ConfigKey<Self>] {
        [.bool("enabled", \.enabled),
         .int("commit_interval", \.commitInterval, range: 1...3_600, unit: "seconds"),
         .tables("source", \.sources)]
    }

    func validate(_ s: ConfigSection) throws {
        if enabled && sources.isEmpty {
            throw s.error("source", "health is enabled but no [[health.source]] is configured: add one or set enabled = false")
        }
    }
}

/// One health source: a file that grows, or a serial port.
public struct HealthSourceConfig: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable { case file, serial }
    public enum Format: String, Sendable, CaseIterable { case jsonl, csv, keyvalue }

    public var kind: Kind
    public var path: String
    public var format: Format
    /// Serial only.
    public var baud: Int = 9_600
    /// A name for `metadata.source`; the path when not given.
    public var name: String
    /// File only: on first start, import samples of the last N days already in the file.
    public var backfillDays: Int = 7
    /// The metrics the server lets the device capture, nil for all: `HealthConfig.serverMetrics`,
    /// handed to each source by the health stream (not a key of the file).
    public var serverMetrics: Set<String>?

    public init(kind: Kind, path: String, format: Format, name: String? = nil) {
        self.kind = kind
        self.path = path
        self.format = format
        self.name = name ?? path
    }

}

extension HealthSourceConfig: ConfigTable {
    /// `path` has no default: reading it fails when it is not given.
    static var defaults: Self { Self(kind: .file, path: "", format: .jsonl) }
    static var keys: [ConfigKey<Self>] {
        [.choice("kind", \.kind, allowed: Kind.allCases),
         .requiredString("path", \.path, missing: "missing: give the file or serial device to read, e.g. path = \"/var/log/hr.jsonl\""),
         .choice("format", \.format, allowed: Format.allCases),
         .int("baud", \.baud, range: 50...4_000_000),
         // Read after `path`, its default.
         ConfigKey("name", read: { s, t in t.name = try s.optionalString("name") ?? t.path }, write: { $0.name }),
         .int("backfill_days", \.backfillDays, range: 0...3_650, unit: "days")]
    }
}
