import Foundation
import Platform
import TOMLKit

/// Writes a configuration back to TOML (what `onboard` saves). TOMLKit renders the
/// text, so quoting and escaping are toml++'s; the file is written 0600 because it holds
/// the device token, atomically (a temp file renamed over the old one), and read back
/// before it replaces anything.
public enum ConfigWriter {
    /// The whole configuration as a new file (when there is no file to edit).
    public static func render(_ config: AgentConfig) -> String {
        """
            # ariata-agent configuration, written by 'ariata-agent onboard'.
            # Every key is documented in the example file (etc/agent.toml in the source tree).
            # This file holds the device token: keep it mode 0600.

            """ + table(config).convert() + "\n"
    }

    /// The text to write: `existing` (the file as it is) with only the keys whose values
    /// change edited in place, every other byte kept (comments, order, the user's own
    /// notes); a new rendering when there is no file, or when it cannot be read as a
    /// configuration, or when what changes is beyond single keys (health sources).
    public static func text(for config: AgentConfig, editing existing: String?, path: String) -> String {
        guard let existing, let original = try? AgentConfig(toml: existing, file: path) else { return render(config) }
        if let edits = edits(from: original, to: config) {
            return ConfigEditor.apply(edits, to: existing, formerNames: AgentConfig.formerNames(prefix: ""))
        }
        return appendingSources(config, to: existing, original: original) ?? render(config)
    }

    /// Health sources added after the file's own (onboard's new Bluetooth sensor): the
    /// other keys edited in place and the new `[[health.source]]` tables appended, so the
    /// file's comments survive; nil when the sources changed otherwise.
    static func appendingSources(_ config: AgentConfig, to existing: String, original: AgentConfig) -> String? {
        let old = original.health.sources, new = config.health.sources
        guard new.count > old.count, Array(new.prefix(old.count)) == old else { return nil }
        var others = config
        others.health.sources = old
        guard let edits = edits(from: original, to: others) else { return nil }
        var text = ConfigEditor.apply(edits, to: existing, formerNames: AgentConfig.formerNames(prefix: ""))
        if !text.hasSuffix("\n") { text += "\n" }
        for source in new.dropFirst(old.count) {
            text += "\n[[health.source]]\n" + source.tomlTable.convert() + "\n"
        }
        return text
    }

    /// The single-key edits that turn a file reading as `original` into one reading as
    /// `config`, comparing effective values (defaults included); nil when an array of
    /// tables (the health sources) differs.
    static func edits(from original: AgentConfig, to config: AgentConfig) -> [ConfigEditor.Edit]? {
        let before = table(original), after = table(config)
        var edits: [ConfigEditor.Edit] = []
        // A section written before but not now (the metrics file turned off) loses its keys.
        let sections = after.keys + before.keys.filter { after[$0] == nil }
        for section in sections {
            let old = before[section]?.table ?? TOMLTable(), new = after[section]?.table ?? TOMLTable()
            for key in Array(Set(old.keys).union(new.keys)).sorted() {
                let was = old[key].map(ConfigEditor.render), will = new[key].map(ConfigEditor.render)
                guard was != will else { continue }
                // Arrays of tables (the health sources) are not edited line by line; an
                // array of strings (the box's addresses) is one line like any value.
                if holdsTables(new[key]) || holdsTables(old[key]) { return nil }
                edits.append(ConfigEditor.Edit(section, key, will))
            }
        }
        return edits
    }

    private static func holdsTables(_ value: (any TOMLValueConvertible)?) -> Bool {
        guard let value, value.type == .array, let array = value.array else { return false }
        return array.contains { $0.type == .table } || array.isEmpty
    }

    /// Every key of `config` with its value, by section, as TOMLKit tables: what each
    /// section's key list (`ConfigTable.keys`) writes.
    static func table(_ config: AgentConfig) -> TOMLTable { config.tomlTable }

    /// Writes `config` to `path` with mode 0600, editing the file already there in place
    /// (see `text(for:editing:path:)`); when `owner` (a user name) is given and we are
    /// root, the file is handed to that user. Fails before touching the old file when the
    /// new text does not read back to the same configuration.
    public static func write(_ config: AgentConfig, to path: String, owner: String? = nil) throws {
        let text = Self.text(for: config, editing: try? String(contentsOfFile: path, encoding: .utf8), path: path)
        var check = try AgentConfig(toml: text, file: path)
        check.file = config.file
        var expected = config
        expected.file = config.file
        if expected.server.tokenFile != nil { check.server.token = expected.server.token }
        guard check == expected else {
            throw ConfigError(file: path, key: nil, message: "internal error: the configuration does not read back the same; nothing was written")
        }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o750])
        }
        var fileOwner: FileWrites.Owner?
        if let owner, getuid() == 0, let user = getpwnam(owner) {
            fileOwner = FileWrites.Owner(user: user.pointee.pw_uid, group: user.pointee.pw_gid)
        }
        do {
            try FileWrites.replace(path, with: Data(text.utf8), mode: 0o600, owner: fileOwner, durable: true)
        } catch let error as FileWriteError {
            let hint = error.step == .create ? "; run as root (sudo) or pass --config" : ""
            throw ConfigError(file: path, key: nil, message: "cannot write: \(error.reason)\(hint)")
        }
    }
}
