import Foundation
import TOMLKit

/// Changes a few keys of a TOML file and keeps every other byte: the comments of the
/// installed example (the documentation of every key), the user's own comments, the order
/// of keys, blank lines. `onboard` edits the file this way instead of writing it anew.
///
/// TOMLKit (toml++) parses and renders TOML but drops comments, so the edit is made on the
/// lines: a key's line inside its `[section]` is replaced; a missing key goes right after
/// its commented-out example (`# ca_file = …`) when there is one, else at the end of its
/// section; a missing section is appended. Values are rendered by TOMLKit, so quoting
/// and escaping are toml++'s. The result is parsed again by the caller before it is used.
public enum ConfigEditor {
    /// One key to set (or, with a nil value, to remove) in a `[section]` (dotted names
    /// such as `location` only; arrays of tables like `[[health.source]]` are not edited).
    public struct Edit: Sendable, Equatable {
        public var section: String
        public var key: String
        /// The value as TOML text (`ConfigEditor.render`); nil removes the key.
        public var value: String?

        public init(_ section: String, _ key: String, _ value: String?) {
            self.section = section
            self.key = key
            self.value = value
        }
    }

    /// `formerNames`: keys' names before a rename, by dotted current name
    /// (`daemon.check_interval`: `health_interval`); a key set or removed replaces (or
    /// removes) the line of its former name, so the file never gives both.
    public static func apply(_ edits: [Edit], to text: String, formerNames: [String: String] = [:]) -> String {
        var lines = text.components(separatedBy: "\n")
        // A file that ends with a newline splits into a last empty element: keep it last.
        let trailingNewline = lines.last == ""
        if trailingNewline { lines.removeLast() }
        for edit in edits {
            apply(edit, former: formerNames["\(edit.section).\(edit.key)"], to: &lines)
        }
        return lines.joined(separator: "\n") + (trailingNewline || lines.isEmpty ? "\n" : "")
    }

    private static func apply(_ edit: Edit, former: String?, to lines: inout [String]) {
        let rendered = edit.value.map { "\(edit.key) = \($0)" }
        guard let range = sectionRange(edit.section, in: lines) else {
            guard let rendered else { return }
            if let last = lines.last, !last.trimmingCharacters(in: .whitespaces).isEmpty { lines.append("") }
            lines.append("[\(edit.section)]")
            lines.append(rendered)
            return
        }
        if let index = range.first(where: { keyName(of: lines[$0]) == edit.key })
            ?? range.first(where: { former != nil && keyName(of: lines[$0]) == former }) {
            if let rendered {
                let indent = String(lines[index].prefix { $0 == " " || $0 == "\t" })
                lines[index] = indent + rendered
            } else {
                lines.remove(at: index)
            }
            return
        }
        guard let rendered else { return }
        if let example = range.first(where: { commentedKeyName(of: lines[$0]) == edit.key }) {
            lines.insert(rendered, at: example + 1)
            return
        }
        // After the section's last line that is not blank (its comments stay with it).
        let last = range.last { !lines[$0].trimmingCharacters(in: .whitespaces).isEmpty } ?? range.lowerBound - 1
        lines.insert(rendered, at: last + 1)
    }

    /// The lines of `[section]`'s body: from after its header to before the next header.
    private static func sectionRange(_ section: String, in lines: [String]) -> Range<Int>? {
        guard let header = lines.firstIndex(where: { tableHeader(of: $0) == section }) else { return nil }
        let end = lines[(header + 1)...].firstIndex { isHeader($0) } ?? lines.endIndex
        // Comments that introduce the next table (`# One block per source` above a
        // commented `# [[health.source]]`) belong to it, not to this section's end.
        return (header + 1) ..< end
    }

    /// `section` for a `[section]` line (`[[array]]` tables give nil).
    static func tableHeader(of line: String) -> String? {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("["), !trimmed.hasPrefix("[["), let close = trimmed.firstIndex(of: "]") else { return nil }
        let rest = trimmed[trimmed.index(after: close)...].trimmingCharacters(in: .whitespaces)
        guard rest.isEmpty || rest.hasPrefix("#") else { return nil }
        return trimmed[trimmed.index(after: trimmed.startIndex) ..< close].trimmingCharacters(in: .whitespaces)
    }

    private static func isHeader(_ line: String) -> Bool {
        line.trimmingCharacters(in: .whitespaces).hasPrefix("[")
    }

    /// The key of a `key = value` line; nil for comments, blanks and headers.
    static func keyName(of line: String) -> String? {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard !trimmed.hasPrefix("#"), !trimmed.hasPrefix("["), let equals = trimmed.firstIndex(of: "=") else { return nil }
        let key = trimmed[..<equals].trimmingCharacters(in: .whitespaces)
        return key.isEmpty ? nil : key
    }

    /// The key of a commented-out example line, `# key = value`.
    private static func commentedKeyName(of line: String) -> String? {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("#") else { return nil }
        let body = String(trimmed.drop { $0 == "#" })
        guard let key = keyName(of: body), key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { return nil }
        return key
    }

    /// A value as toml++ writes it.
    public static func render(_ value: any TOMLValueConvertible) -> String {
        let line = TOMLTable(["v": value]).convert().trimmingCharacters(in: .whitespacesAndNewlines)
        guard let equals = line.firstIndex(of: "=") else { return line }
        return line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
    }
}
