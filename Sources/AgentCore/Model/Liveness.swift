import Foundation

/// Whether a stream (or the uploader) is live, as the supervisor asks for it: what
/// `status` shows as a component's `health` (a field name kept for its readers).
public enum Liveness: Sendable, Equatable, CustomStringConvertible {
    case healthy
    case unhealthy(reason: String, code: AgentErrorCode? = nil)
    case disabled
    /// Held while the machine sleeps (logind's `PrepareForSleep`): no fault, capture
    /// starts again on the resume (docs/laptop.md, "Sleep and wake").
    case asleep

    public var isHealthy: Bool {
        if case .healthy = self { return true }
        return false
    }

    /// A fault: what the supervisor counts, restarts, and `status` reports.
    public var isUnhealthy: Bool {
        if case .unhealthy = self { return true }
        return false
    }

    /// The short state word stored in the database and shown by `status`.
    public var state: String {
        switch self {
        case .healthy: return "healthy"
        case .unhealthy: return "unhealthy"
        case .disabled: return "disabled"
        case .asleep: return "asleep"
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
        case .healthy, .disabled, .asleep: return state
        case .unhealthy(let reason, let code):
            return "unhealthy: " + (code.map { "\($0.rawValue) " } ?? "") + reason
        }
    }
}
