/// A file another program appends samples to (`kind = "file"`).
public struct FileSourceSettings: HealthSourceKindSettings {
    public static let kind = HealthSourceKindName.file

    public var path: String
    public var format: HealthLineFormat
    /// The path when not given.
    public var name: String
    /// On first start, import samples of the last N days already in the file.
    public var backfillDays: Int = 7

    public init(path: String, format: HealthLineFormat = .jsonl, name: String? = nil) {
        self.path = path
        self.format = format
        self.name = name ?? path
    }

    public var settings: HealthSourceSettings { .file(self) }
}

extension HealthSourceKindName {
    public static let file = HealthSourceKindName(rawValue: "file")
}

extension FileSourceSettings: HealthSourceKindTable {
    /// `path` has no default: reading it fails when it is not given.
    static var defaults: Self { Self(path: "") }
    static var keys: [ConfigKey<Self>] {
        [.linePath,
         .choice("format", \.format, allowed: HealthLineFormat.allCases),
         .nameOrPath,
         .int("backfill_days", \.backfillDays, range: 0...3_650, unit: "days")]
    }

    func validate(_ s: ConfigSection) throws {
        try validateLineSource(s)
    }
}

/// The keys and checks a file and a serial port share: both are a path of lines.
protocol LineSourceTable {
    var path: String { get set }
    var name: String { get set }
}

extension FileSourceSettings: LineSourceTable {}

extension ConfigKey where Table: LineSourceTable {
    /// Required (`validateLineSource`); read as an optional string so the message can say
    /// what to give.
    static var linePath: Self {
        ConfigKey("path", read: { s, t in t.path = try s.optionalString("path") ?? "" },
                  write: { $0.path.isEmpty ? nil : $0.path })
    }

    /// Read after `path`, its default.
    static var nameOrPath: Self {
        ConfigKey("name", read: { s, t in t.name = try s.optionalString("name") ?? t.path }, write: { $0.name })
    }
}

extension LineSourceTable {
    func validateLineSource(_ s: ConfigSection) throws {
        if path.isEmpty {
            throw s.error("path", "missing: give the file or serial device to read, e.g. path = \"/var/log/hr.jsonl\"")
        }
        if try s.optionalString("address") != nil { throw s.error("address", "only a kind = \"ble\" source has an address") }
    }
}
