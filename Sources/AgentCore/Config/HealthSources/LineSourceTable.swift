/// The keys and checks a file and a serial port share: both are a path of lines.
protocol LineSourceTable {
    var path: String { get set }
    var name: String { get set }
}

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
