import TOMLKit

/// One key of a `ConfigTable`: its name, how it is read (type, range, default, checks of
/// its own value) and how it is written. The default is the field's value in
/// `Table.defaults`, so it is stated once, where the field is declared.
struct ConfigKey<Table> {
    let name: String
    let read: (ConfigSection, inout Table) throws -> Void
    /// The value to write; nil leaves the key out.
    let write: (Table) -> (any TOMLValueConvertible)?
    /// For a key that holds tables: the dotted names of their keys below `name`.
    var leaves: ((String) -> [String])?
    /// The key's name before a rename, still read (`formerly`).
    var formerName: String?
    /// For a key that holds a table: its keys' former names, by dotted current name.
    var formerNames: ((String) -> [String: String])?

    init(_ name: String, read: @escaping (ConfigSection, inout Table) throws -> Void,
         write: @escaping (Table) -> (any TOMLValueConvertible)?) {
        self.name = name
        self.read = read
        self.write = write
    }
}

extension ConfigKey {
    /// The key as it is, also read under `former`, its name before a rename (docs/configuration.md
    /// lists the former names). Written under its current name only, so the next rewrite
    /// of the file (`onboard`) drops the former one.
    func formerly(_ former: String) -> Self {
        let name = self.name
        let read = self.read
        var key = Self(name, read: { s, t in
            try s.accept(formerName: former, for: name)
            try read(s, &t)
        }, write: write)
        key.leaves = leaves
        key.formerName = former
        return key
    }

    static func bool(_ name: String, _ field: WritableKeyPath<Table, Bool>) -> Self {
        Self(name, read: { s, t in t[keyPath: field] = try s.bool(name, default: t[keyPath: field]) },
             write: { $0[keyPath: field] })
    }

    /// A switch whose default depends on something outside the file: unset reads as nil
    /// and is not written.
    static func optionalBool(_ name: String, _ field: WritableKeyPath<Table, Bool?>) -> Self {
        Self(name, read: { s, t in t[keyPath: field] = s.contains(name) ? try s.bool(name, default: false) : nil },
             write: { $0[keyPath: field] })
    }

    static func int(_ name: String, _ field: WritableKeyPath<Table, Int>, range: ClosedRange<Int>, unit: String = "") -> Self {
        Self(name, read: { s, t in t[keyPath: field] = try s.int(name, default: t[keyPath: field], range: range, unit: unit) },
             write: { $0[keyPath: field] })
    }

    /// `check` returns what is wrong with a value, nil when it is fine.
    static func string(_ name: String, _ field: WritableKeyPath<Table, String>,
                       check: ((String) -> String?)? = nil) -> Self {
        Self(name, read: { s, t in
            let value = try s.string(name, default: t[keyPath: field])
            if let problem = check?(value) { throw s.error(name, problem) }
            t[keyPath: field] = value
        }, write: { $0[keyPath: field] })
    }

    /// A string with no default: an empty one reads as unset, an unset one is not written.
    static func optionalString(_ name: String, _ field: WritableKeyPath<Table, String?>,
                               check: ((String) -> String?)? = nil) -> Self {
        Self(name, read: { s, t in
            let value = try s.optionalString(name)
            if let value, let problem = check?(value) { throw s.error(name, problem) }
            t[keyPath: field] = value
        }, write: { $0[keyPath: field] })
    }

    /// An array of strings; an empty one is not written.
    static func strings(_ name: String, _ field: WritableKeyPath<Table, [String]>,
                        check: ((String) -> String?)? = nil) -> Self {
        Self(name, read: { s, t in
            let values = try s.strings(name, default: t[keyPath: field])
            for value in values {
                if let problem = check?(value) { throw s.error(name, problem) }
            }
            t[keyPath: field] = values
        }, write: { t in
            let values = t[keyPath: field]
            return values.isEmpty ? nil : TOMLArray(values.map { $0 as any TOMLValueConvertible })
        })
    }

    /// A string that must be given; `missing` says what to give.
    static func requiredString(_ name: String, _ field: WritableKeyPath<Table, String>, missing: String) -> Self {
        Self(name, read: { s, t in
            guard let value = try s.optionalString(name) else { throw s.error(name, missing) }
            t[keyPath: field] = value
        }, write: { $0[keyPath: field] })
    }

    static func choice(_ name: String, _ field: WritableKeyPath<Table, String>, allowed: [String]) -> Self {
        Self(name, read: { s, t in t[keyPath: field] = try s.choice(name, default: t[keyPath: field], allowed: allowed) },
             write: { $0[keyPath: field] })
    }

    static func choice<Value: RawRepresentable>(_ name: String, _ field: WritableKeyPath<Table, Value>,
                                                allowed: [Value]) -> Self where Value.RawValue == String {
        Self(name, read: { s, t in
            let raw = try s.choice(name, default: t[keyPath: field].rawValue, allowed: allowed.map(\.rawValue))
            // `choice` let only the raw values of `allowed` through.
            t[keyPath: field] = allowed.first { $0.rawValue == raw } ?? t[keyPath: field]
        }, write: { $0[keyPath: field].rawValue })
    }

    /// A number that must be given (a zone's centre): no default would be right.
    static func requiredDouble(_ name: String, _ field: WritableKeyPath<Table, Double>,
                               range: ClosedRange<Double>, unit: String = "") -> Self {
        Self(name, read: { s, t in t[keyPath: field] = try s.requiredDouble(name, range: range, unit: unit) },
             write: { $0[keyPath: field] })
    }

    /// A sub-table (`[server]` in the file). `omittedAtDefaults`: not written while every
    /// key of it is at its default, so a file that never mentioned it keeps not doing so.
    static func section<Value: ConfigTable>(_ name: String, _ field: WritableKeyPath<Table, Value>,
                                            omittedAtDefaults: Bool = false) -> Self {
        var key = Self(name, read: { s, t in t[keyPath: field] = try Value(reading: s.section(name)) }, write: { t in
            let value = t[keyPath: field]
            if omittedAtDefaults && value == Value.defaults { return nil }
            let table = value.tomlTable
            return table.isEmpty ? nil : table
        })
        key.leaves = { Value.leafNames(prefix: $0) }
        key.formerNames = { Value.formerNames(prefix: $0) }
        return key
    }

    /// An array of tables (`[[health.source]]`); an empty one is not written.
    static func tables<Element: ConfigTable>(_ name: String, _ field: WritableKeyPath<Table, [Element]>) -> Self {
        var key = Self(name, read: { s, t in t[keyPath: field] = try s.tables(name).map { try Element(reading: $0) } }, write: { t in
            let elements = t[keyPath: field]
            return elements.isEmpty ? nil : TOMLArray(elements.map { $0.tomlTable as any TOMLValueConvertible })
        })
        key.leaves = { Element.leafNames(prefix: $0) }
        return key
    }
}
