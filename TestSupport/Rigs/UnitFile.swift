import Foundation

/// A systemd unit file read as systemd reads its settings: `[Section]` headers and
/// `Key=Value` lines (a key may repeat; each line is one value), comments and blank lines
/// skipped. For the checks of the shipped units and the environment the rigs run with.
public struct UnitFile: Sendable {
    /// "Section.Key" to its values, in the file's order.
    public let settings: [String: [String]]

    public init(contentsOf path: String) throws {
        var settings: [String: [String]] = [:]
        var section = ""
        for raw in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast())
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            settings["\(section).\(key)", default: []].append(value)
        }
        self.settings = settings
    }

    /// The values of `key` in `[section]`, empty when the unit does not set it.
    public func values(_ section: String, _ key: String) -> [String] {
        settings["\(section).\(key)"] ?? []
    }
}
