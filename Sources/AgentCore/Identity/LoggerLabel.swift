import Logging

/// Every component's logger label, in one place: the journal shows the label in front of
/// each line, so a person reading it must be able to tell the supervisor from the heart
/// rate stream. Each stream and each component has a label of its own; the raw values are
/// unique by construction (docs/operations.md, "Run", its logging).
public enum LoggerLabel: String, CaseIterable, Sendable {
    case agent = "ariata.agent"
    /// The maintenance rounds of the streams and the uploader (not the health stream).
    case supervisor = "ariata.supervisor"
    case database = "ariata.database"
    case upload = "ariata.upload"
    case storage = "ariata.storage"
    case time = "ariata.time"
    case power = "ariata.power"
    case metrics = "ariata.metrics"
    case network = "ariata.network"
    case sleep = "ariata.sleep"
    case switches = "ariata.switches"
    /// Desktop notices (the user service's).
    case notify = "ariata.notify"
    case sync = "ariata.sync"
    case onboard = "ariata.onboard"
    case bench = "ariata.bench"
    case location = "ariata.location"
    case microphone = "ariata.microphone"
    /// The health stream (heart rate, steps, sleep, ...).
    case health = "ariata.health"

    /// The label of a capture stream.
    public static func stream(_ stream: StreamName) -> LoggerLabel {
        switch stream {
        case .location: return .location
        case .microphone: return .microphone
        case .health: return .health
        }
    }
}

extension Logger {
    /// A logger with one of the agent's labels.
    public init(_ label: LoggerLabel) {
        self.init(label: label.rawValue)
    }
}
