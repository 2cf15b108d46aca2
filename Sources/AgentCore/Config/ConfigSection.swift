import TOMLKit

/// Reads the keys of one TOML table with types, ranges and defaults, and remembers
/// which keys it read so that `finish()` can name any key nobody knows.
public final class ConfigSection {
    public let file: String
    /// Dotted path of this table ("" for the top level, "health.source[1]", ...).
    public let path: String
    private let table: TOMLTable?
    private var known: Set<String> = []
    /// Keys read under a former name: the current name and the name the file used.
    private var formerNames: [String: String] = [:]
    /// Former names a reader accepts: not unknown, not offered in the list of keys.
    private var formerNamesRead: Set<String> = []

    init(file: String, path: String, table: TOMLTable?) {
        self.file = file
        self.path = path
        self.table = table
    }

    public var isPresent: Bool { table != nil }

    /// Whether the table gives `key` (without reading it).
    public func contains(_ key: String) -> Bool { table?[formerNames[key] ?? key] != nil }

    func keyPath(_ key: String) -> String {
        let spelled = formerNames[key] ?? key
        return path.isEmpty ? spelled : "\(path).\(spelled)"
    }

    func error(_ key: String, _ message: String) -> ConfigError {
        ConfigError(file: file, key: keyPath(key), message: message)
    }

    private func value(_ key: String) -> (any TOMLValueConvertible)? {
        known.insert(key)
        if let former = formerNames[key] { return table?[former] }
        return table?[key]
    }

    /// Reads `key` from `former`, its name before a rename, when the file still uses that
    /// name (errors then name it as the file spells it); a file that gives both is refused,
    /// since one of the two values would be silently ignored.
    func accept(formerName former: String, for key: String) throws {
        formerNamesRead.insert(former)
        guard table?[former] != nil else { return }
        guard table?[key] == nil else {
            throw error(former, "\(former) is the former name of \(key), which is also given: keep only \(key)")
        }
        formerNames[key] = former
    }

    public func string(_ key: String, default fallback: String) throws -> String {
        guard let v = value(key) else { return fallback }
        guard let s = v.string else { throw error(key, "expected a string in quotes, got \(Self.describe(v))") }
        return s
    }

    public func optionalString(_ key: String) throws -> String? {
        guard let v = value(key) else { return nil }
        guard let s = v.string else { throw error(key, "expected a string in quotes, got \(Self.describe(v))") }
        return s.isEmpty ? nil : s
    }

    /// An array of strings (`["a", "b"]`); an absent key gives `fallback`.
    public func strings(_ key: String, default fallback: [String]) throws -> [String] {
        guard let v = value(key) else { return fallback }
        guard let array = v.array else { throw error(key, "expected an array of strings in quotes, got \(Self.describe(v))") }
        return try array.enumerated().map { index, element in
            guard let s = element.string else {
                throw error(key, "element \(index + 1): expected a string in quotes, got \(Self.describe(element))")
            }
            return s
        }
    }

    public func bool(_ key: String, default fallback: Bool) throws -> Bool {
        guard let v = value(key) else { return fallback }
        guard let b = v.bool else { throw error(key, "expected true or false, got \(Self.describe(v))") }
        return b
    }

    public func int(_ key: String, default fallback: Int, range: ClosedRange<Int>, unit: String = "") throws -> Int {
        guard let v = value(key) else { return fallback }
        guard let i = v.int else {
            throw error(key, "expected a whole number from \(range.lowerBound) to \(range.upperBound)\(unit.isEmpty ? "" : " " + unit), got \(Self.describe(v))")
        }
        guard range.contains(i) else {
            throw error(key, "\(i) is out of range: allowed \(range.lowerBound) to \(range.upperBound)\(unit.isEmpty ? "" : " " + unit)")
        }
        return i
    }

    public func double(_ key: String, default fallback: Double, range: ClosedRange<Double>, unit: String = "") throws -> Double {
        guard let v = value(key) else { return fallback }
        guard let d = v.double ?? v.int.map(Double.init) else {
            throw error(key, "expected a number from \(range.lowerBound) to \(range.upperBound)\(unit.isEmpty ? "" : " " + unit), got \(Self.describe(v))")
        }
        guard range.contains(d) else {
            throw error(key, "\(d) is out of range: allowed \(range.lowerBound) to \(range.upperBound)\(unit.isEmpty ? "" : " " + unit)")
        }
        return d
    }

    /// A number that must be given (a zone's centre, say): no default would be right.
    public func requiredDouble(_ key: String, range: ClosedRange<Double>, unit: String = "") throws -> Double {
        guard value(key) != nil else {
            throw error(key, "missing: give a number from \(range.lowerBound) to \(range.upperBound)\(unit.isEmpty ? "" : " " + unit)")
        }
        return try double(key, default: range.lowerBound, range: range, unit: unit)
    }

    public func choice(_ key: String, default fallback: String, allowed: [String]) throws -> String {
        let s = try string(key, default: fallback)
        guard allowed.contains(s) else {
            throw error(key, "\"\(s)\" is not allowed: use one of \(allowed.map { "\"\($0)\"" }.joined(separator: ", "))")
        }
        return s
    }

    /// A sub-table; an absent one reads as empty, so every key takes its default.
    public func section(_ key: String) throws -> ConfigSection {
        guard let v = value(key) else { return ConfigSection(file: file, path: keyPath(key), table: nil) }
        guard let t = v.table else { throw error(key, "expected a table ([\(keyPath(key))]), got \(Self.describe(v))") }
        return ConfigSection(file: file, path: keyPath(key), table: t)
    }

    /// An array of tables (`[[health.source]]`).
    public func tables(_ key: String) throws -> [ConfigSection] {
        guard let v = value(key) else { return [] }
        guard let array = v.array else { throw error(key, "expected an array of tables ([[\(keyPath(key))]]), got \(Self.describe(v))") }
        return try array.enumerated().map { index, element in
            guard let t = element.table else {
                throw error("\(key)[\(index + 1)]", "expected a table, got \(Self.describe(element))")
            }
            return ConfigSection(file: file, path: "\(keyPath(key))[\(index + 1)]", table: t)
        }
    }

    /// Fails on the first key of this table that no reader asked for.
    public func finish() throws {
        guard let table else { return }
        for key in table.keys.sorted() where !known.contains(key) && !formerNamesRead.contains(key) {
            let allowed = known.sorted().joined(separator: ", ")
            throw error(key, "unknown key; keys allowed here: \(allowed)")
        }
    }

    static func describe(_ v: any TOMLValueConvertible) -> String {
        switch v.type {
        case .string: return "the string \"\(v.string ?? "")\""
        case .int: return "the number \(v.int ?? 0)"
        case .double: return "the number \(v.double ?? 0)"
        case .bool: return v.bool == true ? "true" : "false"
        case .table: return "a table"
        case .array: return "an array"
        default: return "a \(v.type)"
        }
    }
}
