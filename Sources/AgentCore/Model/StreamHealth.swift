import Foundation

/// A stream's (or the uploader's) health as the health coordinator asks for it.
public enum StreamHealth: Sendable, Equatable, CustomStringConvertible {
    case healthy
    case unhealthy(reason: String, code: AgentErrorCode? = nil)
    case disabled

    public var isHealthy: Bool {
        if case .healthy = self { return true }
        return false
    }

    /// The short state word stored in the database and shown by `status`.
    public var state: String {
        switch self {
        case .healthy: return "healthy"
        case .unhealthy: return "unhealthy"
        case .disabled: return "disabled"
        }
    }

    public var reason: String? {
        if case .unhealthy(let reason, _) = self { return reason }
        return nil
    }

    public var code: AgentErrorCode? {
        if case .unhealthy(_, let code) = self { return code }
        return nil
    }

    public var description: String {
        switch self {
        case .healthy, .disabled: return state
        case .unhealthy(let reason, let code):
            return "unhealthy: " + (code.map { "\($0.rawValue) " } ?? "") + reason
        }
    }
}

/// What every capture stream is to the daemon: something that starts, stops and says
/// how it is. The stream writes its records to a `RecordSink` given at creation.
public protocol CaptureStream: AnyObject, Sendable {
    var stream: StreamName { get }
    /// Starts capture on the stream's own thread; returns at once.
    func start()
    /// Stops capture, finishing and writing what is in progress; returns when done.
    func stop()
    func health() -> StreamHealth
    /// Running totals `status` shows (e.g. the health stream's malformed lines), by name.
    func counters() -> [String: Int]
}

extension CaptureStream {
    public func counters() -> [String: Int] { [:] }
}

/// Names of the counters streams report (`CaptureStream.counters()`), kept in
/// `agent_state` under `StreamCounter.key(component, name)` for `status`.
public enum StreamCounter {
    /// Health lines that could not be read at all (counted, logged, skipped).
    public static let malformedLines = "malformed_lines"
    /// Health samples read but refused by the contract's rules (impossible values, units).
    public static let refusedSamples = "refused_samples"
    /// Location fixes not written because they lay in a privacy zone (`[[location.exclude]]`).
    public static let privacySkipped = "privacy_skipped"
    /// Location fixes written coarsened (about 1 km) because they lay in a zone with `action = "coarsen"`.
    public static let privacyCoarsened = "privacy_coarsened"

    /// `component` is the stream's name (`StreamName.rawValue`, the coordinator's component name).
    public static func key(_ component: String, _ name: String) -> String { "counters.\(component).\(name)" }
}
