import TOMLKit

/// A table of the configuration file (`[server]`, `[[health.source]]`, the file itself)
/// whose keys are listed once, in `keys`: reading and writing both go through that list,
/// so a key cannot be read without being written. `finish()` runs right after the list is
/// read, so a key read anywhere else would be refused as unknown in every file.
protocol ConfigTable: Equatable {
    /// Every key, in the order it is read (the first bad key is the one reported).
    static var keys: [ConfigKey<Self>] { get }
    /// The value reading starts from: every key at its default.
    static var defaults: Self { get }
    /// Checks that span keys, made after every key has been read; `section` names the
    /// key in an error (`section.error(key, message)`).
    mutating func validate(_ section: ConfigSection) throws
}

extension ConfigTable {
    func validate(_ section: ConfigSection) throws {}

    init(reading section: ConfigSection) throws {
        var value = Self.defaults
        for key in Self.keys {
            try key.read(section, &value)
        }
        try section.finish()
        try value.validate(section)
        self = value
    }

    /// Every key that has a value to write (unset optionals and empty arrays are left out).
    var tomlTable: TOMLTable {
        let table = TOMLTable()
        for key in Self.keys {
            if let value = key.write(self) { table[key.name] = value }
        }
        return table
    }

    /// The former name of every key read under one too, by the key's dotted current name
    /// (`daemon.check_interval`: `health_interval`), so an edit of the file in place
    /// replaces the former name's line instead of adding a second name.
    static func formerNames(prefix: String) -> [String: String] {
        var names: [String: String] = [:]
        for key in keys {
            let name = prefix.isEmpty ? key.name : "\(prefix).\(key.name)"
            if let former = key.formerName { names[name] = former }
            if let nested = key.formerNames { names.merge(nested(name)) { current, _ in current } }
        }
        return names
    }

    /// The dotted names of every leaf key below this table (`location.exclude.radius`).
    static func leafNames(prefix: String) -> [String] {
        keys.flatMap { key in
            let name = prefix.isEmpty ? key.name : "\(prefix).\(key.name)"
            return key.leaves.map { $0(name) } ?? [name]
        }
    }
}
