import Foundation
import Logging
import Platform

/// One line per event on stderr, in the form journald reads best: a `<N>` syslog
/// priority prefix (journald turns it into the entry's priority and strips it), the
/// label, the message and the metadata; no colour, no timestamp (journald adds its own).
/// On a terminal it writes a timestamp and the level word instead.
public struct JournalLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String
    private let terminal: Bool

    public init(label: String, level: Logger.Level = .info, terminal: Bool = isatty(STDERR_FILENO) != 0) {
        self.label = label
        self.logLevel = level
        self.terminal = terminal
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let tail = merged.isEmpty ? "" : " " + merged.keys.sorted().map { "\($0)=\(merged[$0].map { "\($0)" } ?? "")" }.joined(separator: " ")
        // One event, one line: a multi-line message would split into several journal entries.
        // The standard library's calls, not Foundation's (`replacingOccurrences`,
        // `FileHandle`): each event would bring their code back into the daemon's resident
        // set (docs/decisions/0005-start-up-page-drop.md).
        var message = "\(event.message)"
        if message.utf8.contains(UInt8(ascii: "\n")) {
            message = message.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: " ⏎ ")
        }
        var line: String
        if terminal {
            line = "\(Self.timestamp()) \(event.level) \(label): \(message)\(tail)\n"
        } else {
            line = "<\(Self.syslogPriority(event.level))>\(label): \(message)\(tail)\n"
        }
        line.withUTF8 { _ = FileWrites.writeAll(UnsafeRawBufferPointer($0), to: STDERR_FILENO) }
    }

    public static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    private static func timestamp() -> String {
        RFC3339Local.string(from: Date())
    }
}

private enum RFC3339Local {
    static func string(from date: Date) -> String {
        var t = time_t(date.timeIntervalSince1970)
        var parts = tm()
        localtime_r(&t, &parts)
        return String(format: "%04d-%02d-%02d %02d:%02d:%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                      Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }
}
