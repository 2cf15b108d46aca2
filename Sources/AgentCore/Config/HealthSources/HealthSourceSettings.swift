import TOMLKit

/// One `[[health.source]]` entry: the settings of one kind of source. Each kind reads its
/// own keys and checks them (`HealthSourceKindSettings`); this enum is the list of the
/// kinds the file accepts, and Capture's `HealthSourceKinds` the list of what makes and
/// checks them (two lists because the configuration is read here, below Capture:
/// docs/development.md, "Adding a health input kind").
public enum HealthSourceSettings: Sendable, Equatable {
    case file(FileSourceSettings)
    case serial(SerialSourceSettings)
    case ble(BLESourceSettings)

    /// Every kind, in the order an unknown `kind` lists them. A new kind is a case above,
    /// its line in `table` and its type here.
    static let kinds: [any HealthSourceKindTable.Type] = [FileSourceSettings.self, SerialSourceSettings.self, BLESourceSettings.self]

    /// The payload, with its reading and checks.
    var table: any HealthSourceKindTable {
        switch self {
        case .file(let settings): settings
        case .serial(let settings): settings
        case .ble(let settings): settings
        }
    }

    /// The names `kind = "..."` accepts.
    public static var kindNames: [HealthSourceKindName] { kinds.map { $0.kind } }

    /// What a table that names only its kind starts from (every other key at its default;
    /// not yet valid where a kind needs a key, such as a file's path).
    public init?(defaultsOf kind: HealthSourceKindName) {
        guard let table = Self.kinds.first(where: { $0.kind == kind })?.defaults else { return nil }
        self = table.settings
    }

    /// The kind's own settings.
    public var kindSettings: any HealthSourceKindSettings { table }

    public var kind: HealthSourceKindName { type(of: table).kind }

    /// `metadata.source` of its samples, and its name in logs and `status`.
    public var name: String {
        get { table.name }
        set {
            var table = self.table
            table.name = newValue
            self = table.settings
        }
    }
}

/// The name a `[[health.source]]` gives its kind (`kind = "file"`); each kind declares
/// its own beside its settings (`HealthSourceKindName.file`).
public struct HealthSourceKindName: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// What one kind of health source reads from its `[[health.source]]` table.
public protocol HealthSourceKindSettings: Sendable, Equatable {
    static var kind: HealthSourceKindName { get }
    /// `metadata.source` of its samples, and its name in logs and `status`.
    var name: String { get set }
    /// Itself, as an entry of `[health]`.
    var settings: HealthSourceSettings { get }
}

/// A kind's settings as the file reads them: its keys (`ConfigTable.keys`: reading,
/// writing, the documented names) and the checks that span them (`validate`).
protocol HealthSourceKindTable: HealthSourceKindSettings, ConfigTable {}

extension HealthSourceKindTable {
    static var keyNames: [String] { keys.map(\.name) }

    /// Reads key `name` when this kind has it; false when it has not.
    mutating func read(key name: String, _ section: ConfigSection) throws -> Bool {
        guard let key = Self.keys.first(where: { $0.name == name }) else { return false }
        try key.read(section, &self)
        return true
    }

    func value(ofKey name: String) -> (any TOMLValueConvertible)? {
        Self.keys.first { $0.name == name }?.write(self)
    }
}

extension HealthSourceSettings: ConfigTable {
    /// A table without `kind` is a file.
    static var defaults: Self { .file(FileSourceSettings.defaults) }

    /// `kind` first (it chooses whose keys the others are), then every kind's keys once.
    static var keys: [ConfigKey<Self>] {
        let kind = ConfigKey<Self>("kind", read: { s, t in
            let name = try s.choice("kind", default: t.kind.rawValue, allowed: Self.kindNames.map(\.rawValue))
            if let settings = Self(defaultsOf: HealthSourceKindName(rawValue: name)) { t = settings }
        }, write: { $0.kind.rawValue })
        var names: [String] = []
        for table in kinds {
            for name in table.keyNames where !names.contains(name) { names.append(name) }
        }
        return [kind] + names.map { name in
            ConfigKey(name, read: { s, t in try t.read(key: name, s) }, write: { $0.table.value(ofKey: name) })
        }
    }

    private mutating func read(key name: String, _ section: ConfigSection) throws {
        var table = self.table
        if try table.read(key: name, section) {
            self = table.settings
            return
        }
        // Another kind's key. Files written before each kind had its own keys give every
        // key to every source (`format`, `baud`, `backfill_days` to a sensor): it is checked
        // as its kind checks it and left out. A kind refuses in `validate` the ones that
        // would be a mistake (an address for a file).
        for kind in Self.kinds {
            var other = kind.defaults
            if try other.read(key: name, section) { return }
        }
    }

    mutating func validate(_ section: ConfigSection) throws {
        var table = self.table
        try table.validate(section)
        self = table.settings
    }
}

/// How the lines of a file or serial port are written.
public enum HealthLineFormat: String, Sendable, CaseIterable {
    case jsonl, csv, keyvalue
}
