/// A device that sends samples line by line over a serial port (`kind = "serial"`).
public struct SerialSourceSettings: HealthSourceKindSettings {
    public static let kind = HealthSourceKindName.serial

    public var path: String
    public var format: HealthLineFormat
    public var baud: Int = 9_600
    /// The path when not given.
    public var name: String

    public init(path: String, format: HealthLineFormat = .jsonl, name: String? = nil) {
        self.path = path
        self.format = format
        self.name = name ?? path
    }

    public var settings: HealthSourceSettings { .serial(self) }
}

extension HealthSourceKindName {
    public static let serial = HealthSourceKindName(rawValue: "serial")
}

extension SerialSourceSettings: HealthSourceKindTable, LineSourceTable {
    static var defaults: Self { Self(path: "") }
    static var keys: [ConfigKey<Self>] {
        [.linePath,
         .choice("format", \.format, allowed: HealthLineFormat.allCases),
         .int("baud", \.baud, range: 50...4_000_000),
         .nameOrPath]
    }

    func validate(_ s: ConfigSection) throws {
        try validateLineSource(s)
    }
}
