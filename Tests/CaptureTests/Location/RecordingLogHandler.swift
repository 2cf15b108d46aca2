import Foundation
import Logging
import Synchronization

/// A swift-log handler that keeps what was logged, so a test can check how often the
/// stream complains. It also prints, so a failing test's output shows the story.
struct RecordingLogHandler: LogHandler {
    final class Store: Sendable {
        let entries = Mutex<[(level: Logger.Level, message: String)]>([])

        func count(_ level: Logger.Level, containing text: String = "") -> Int {
            entries.withLock { $0.filter { $0.level == level && (text.isEmpty || $0.message.contains(text)) }.count }
        }

        func messages(_ level: Logger.Level) -> [String] {
            entries.withLock { $0.filter { $0.level == level }.map(\.message) }
        }
    }

    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let text = event.message.description
        store.entries.withLock { $0.append((event.level, text)) }
        let details = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        print("[\(event.level)] \(text)" + (details.isEmpty ? "" : " (\(details.joined(separator: ", ")))"))
    }
}
