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

extension FileSourceSettings: HealthSourceKindTable, LineSourceTable {
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
