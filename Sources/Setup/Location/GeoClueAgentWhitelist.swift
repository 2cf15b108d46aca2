import Capture
import Foundation

/// GeoClue's `[agent] whitelist` as the system service needs it: GeoClue lets only the
/// desktop ids listed there act as agents, and the system service is its own agent.
///
/// GeoClue 2.6 (Debian 12) reads only /etc/geoclue/geoclue.conf, another package's
/// conffile: onboarding names the line to change and does not write it. GeoClue 2.7
/// (Debian 13) also reads /etc/geoclue/conf.d/*.conf, whose keys replace the main file's:
/// onboarding writes a drop-in that restates the whole list with ariata-agent in it, and
/// purging the package removes it (docs/laptop.md, "GeoClue's agent whitelist").
public struct GeoClueAgentWhitelist: Sendable {
    public static let agentID = "ariata-agent"
    public static let dropInName = "90-ariata-agent.conf"

    /// /etc/geoclue (tests use a directory of their own).
    public var root: String
    /// GeoClue's version ("2.6.0"), nil when it is not installed.
    public var version: String?

    public init(root: String = "/etc/geoclue", version: String? = GeoClueAgentWhitelist.installedVersion()) {
        self.root = root
        self.version = version
    }

    /// GeoClue's own files, or (tests) `ARIATA_GEOCLUE_ROOT` and `ARIATA_GEOCLUE_VERSION`.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> GeoClueAgentWhitelist {
        GeoClueAgentWhitelist(root: environment["ARIATA_GEOCLUE_ROOT"] ?? "/etc/geoclue",
                              version: environment["ARIATA_GEOCLUE_VERSION"] ?? installedVersion())
    }

    public var mainFile: String { "\(root)/geoclue.conf" }
    public var dropInDirectory: String { "\(root)/conf.d" }
    public var dropInFile: String { "\(dropInDirectory)/\(Self.dropInName)" }

    /// Whether this GeoClue reads drop-ins (2.7 and later).
    public var readsDropIns: Bool {
        guard let version else { return false }
        let parts = version.split(separator: ".").compactMap { Int($0) }
        guard parts.count >= 2 else { return false }
        return (parts[0], parts[1]) >= (2, 7)
    }

    /// The whitelist GeoClue reads: the main file's, replaced by the last drop-in (in name
    /// order) that sets it, when drop-ins are read.
    public func currentList() -> [String] { list(withOwnDropIn: true) }

    /// GeoClue's files in the order it reads them: the main file, then (2.7 and later) the
    /// drop-ins by name, each key of a later one replacing the earlier's.
    func filesInReadingOrder(withOwnDropIn: Bool = true) -> [String] {
        var files = [mainFile]
        if readsDropIns {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dropInDirectory)) ?? []
            files += names.filter { $0.hasSuffix(".conf") && (withOwnDropIn || $0 != Self.dropInName) }.sorted()
                .map { "\(dropInDirectory)/\($0)" }
        }
        return files
    }

    /// A key as GeoClue reads it, and the file that set it last; nil when none does.
    func setting(_ key: String, inSection section: String) -> (value: String, file: String)? {
        var found: (String, String)?
        for file in filesInReadingOrder() {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8),
                  let value = Self.value(of: key, inSection: section, of: text) else { continue }
            found = (value, file)
        }
        return found
    }

    private func list(withOwnDropIn: Bool) -> [String] {
        var list: [String] = []
        for file in filesInReadingOrder(withOwnDropIn: withOwnDropIn) {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8),
                  let value = Self.value(of: "whitelist", inSection: "agent", of: text) else { continue }
            list = value.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        return list
    }

    public var allowsTheAgent: Bool { currentList().contains(Self.agentID) }

    /// What to do about it, worded for a person: nothing, the line to edit, or the drop-in
    /// onboarding writes.
    public var remedy: String {
        if readsDropIns {
            return "run `sudo ariata-agent onboard` again (it writes \(dropInFile)), or add \(Self.agentID) to whitelist in the [agent] section of a file in \(dropInDirectory)"
        }
        let list = (currentList() + [Self.agentID]).joined(separator: ";")
        return "in \(mainFile), section [agent], set whitelist=\(list) and restart geoclue (sudo systemctl restart geoclue)"
    }

    /// Writes the drop-in (GeoClue 2.7 and later): the list GeoClue reads now with the
    /// agent added. Returns the file written, nil when nothing needed writing.
    @discardableResult
    public func writeDropIn() throws -> String? {
        guard readsDropIns, !allowsTheAgent else { return nil }
        // The list without this file's own earlier version, which a rewrite replaces.
        let others = list(withOwnDropIn: false)
        let text = """
            # Written by `ariata-agent onboard`: ariata-agent runs as a system service with no
            # desktop, so it is its own GeoClue agent and must be on this list. GeoClue takes
            # the whole key from the last file that sets it, so the list is restated in full.
            # Removed when the ariata-agent package is purged.
            [agent]
            whitelist=\((others + [Self.agentID]).joined(separator: ";"))

            """
        try FileManager.default.createDirectory(atPath: dropInDirectory, withIntermediateDirectories: true)
        try text.write(toFile: dropInFile, atomically: true, encoding: .utf8)
        chmod(dropInFile, 0o644)
        return dropInFile
    }

    /// A key's value in a GLib key file's section.
    static func value(of key: String, inSection wanted: String, of text: String) -> String? {
        var section = ""
        var found: String?
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") || line.isEmpty { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast())
                continue
            }
            guard section == wanted, let equals = line.firstIndex(of: "=") else { continue }
            if line[..<equals].trimmingCharacters(in: .whitespaces) == key {
                found = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return found
    }

    /// `geoclue --version`, nil when GeoClue is not installed.
    public static func installedVersion(executable: String = "/usr/libexec/geoclue") -> String? {
        guard FileManager.default.isExecutableFile(atPath: executable) else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--version"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }
}
