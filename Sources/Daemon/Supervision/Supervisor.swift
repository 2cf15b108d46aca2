import AgentCore
import Foundation
import Logging
import Platform
import Synchronization

/// Something whose liveness the supervisor asks for and may restart: each capture stream
/// and the uploader.
public protocol SupervisedComponent: AnyObject, Sendable {
    var componentName: String { get }
    func liveness() -> Liveness
    /// Stops and starts the component again (after it reported unhealthy).
    func restart()
    /// Running totals for `status` (see `StreamCounter`); empty for most components.
    func counters() -> [String: Int]
    /// What the component is doing now, as text for `status` (see `StreamCounter`).
    func details() -> [String: String]
    /// Restarts only the parts at fault when the component can (see
    /// `CaptureStream.restartFaults`): what it did, or nil to be restarted whole.
    func restartFaults() -> String?
}

extension SupervisedComponent {
    public func counters() -> [String: Int] { [:] }
    public func details() -> [String: String] { [:] }
    public func restartFaults() -> String? { nil }
}

/// The daemon's maintenance rounds (`[daemon] check_interval`), on one timer for the whole
/// daemon (no stream keeps its own): at every maintenance round it asks each component whether it is
/// live, stores the answer where `status` reads it, restarts a component that stayed
/// unhealthy for two rounds in a row, and tells systemd all is alive. "Health" is the health
/// stream's samples; this is liveness (docs/operations.md).
public final class Supervisor: Sendable {
    private let components: Mutex<[any SupervisedComponent]>
    private let database: AgentDatabase
    private let notifier: SystemdNotifier
    private let logger: Logger
    /// Consecutive unhealthy rounds per component. A component gets one round to recover by
    /// itself (streams reconnect on their own) before it is restarted.
    private let strikes = Mutex<[String: Int]>([:])
    private let restartAfterStrikes: Int
    /// What was last written for `status`, so unchanged values are not rewritten every round.
    private struct Written {
        var health: [String: (health: Liveness, at: TimeInterval)] = [:]
        var counters: [String: Int] = [:]
        var details: [String: String] = [:]
    }
    private let written = Mutex(Written())
    /// An unchanged health is written again after this long (monotonic seconds).
    private let livenessRewrite: TimeInterval
    private let clock: @Sendable () -> TimeInterval

    public init(components: [any SupervisedComponent], database: AgentDatabase, notifier: SystemdNotifier,
                restartAfterStrikes: Int = 2, livenessRewrite: TimeInterval = 300,
                clock: @escaping @Sendable () -> TimeInterval = Monotonic.seconds, logger: Logger) {
        self.livenessRewrite = livenessRewrite
        self.clock = clock
        self.components = Mutex(components)
        self.database = database
        self.notifier = notifier
        self.restartAfterStrikes = restartAfterStrikes
        self.logger = logger
    }

    public func replaceComponents(_ new: [any SupervisedComponent]) {
        components.withLock { $0 = new }
        strikes.withLock { $0 = [:] }
    }

    /// One round of checks. Returns the health of each component, by name.
    ///
    /// What it stores for `status` goes in one transaction: the health of a component
    /// when it changed, or when its stored `checked_at` is `livenessRewrite` old (so `status`
    /// can tell a live daemon's check from a stale one), and the counters that changed.
    /// A quiet daemon thus commits once every few minutes, not once per component per round.
    @discardableResult
    public func checkLiveness(summary: (([String: Liveness]) -> String)? = nil) -> [String: Liveness] {
        let current = components.withLock { $0 }
        let now = clock()
        var results: [String: Liveness] = [:]
        var write = LivenessCheckWrite()
        var details: [String: String] = [:]
        for component in current {
            let name = component.componentName
            let health = component.liveness()
            results[name] = health
            let due = written.withLock { written -> Bool in
                guard let last = written.health[name] else { return true }
                return last.health != health || now - last.at >= livenessRewrite
            }
            if due { write.liveness[name] = health }
            for (counter, value) in component.counters() {
                let key = StreamCounter.key(name, counter)
                if written.withLock({ $0.counters[key] != value }) { write.state[key] = String(value) }
            }
            for (detail, value) in component.details() {
                let key = StreamCounter.key(name, detail)
                if written.withLock({ $0.details[key] != value }) {
                    write.state[key] = value
                    details[key] = value
                }
            }
        }
        do {
            try database.agentState.store(write)
            written.withLock { written in
                for (name, health) in write.liveness { written.health[name] = (health, now) }
                for (key, value) in write.state where details[key] == nil { written.counters[key] = Int(value) }
                written.details.merge(details) { $1 }
            }
        } catch {
            logger.error("cannot store the liveness of the streams for status: \(error); it is written again at the next round")
        }
        for component in current {
            let name = component.componentName
            let health = results[name] ?? .disabled
            let count = strikes.withLock { table -> Int in
                table[name] = health.isUnhealthy ? (table[name] ?? 0) + 1 : 0
                return table[name] ?? 0
            }
            if count == 1 {
                logger.warning("\(name) is \(health)")
            } else if count >= restartAfterStrikes {
                if let partial = component.restartFaults() {
                    logger.warning("\(name) still \(health): \(partial)")
                } else {
                    logger.warning("\(name) still \(health): restarting it")
                    component.restart()
                }
                strikes.withLock { $0[name] = 0 }
            }
        }
        notifier.watchdog()
        notifier.status(summary?(results) ?? Self.summary(results))
        return results
    }

    /// A one-line summary for `systemctl status`: "location healthy, microphone paused, …".
    public static func summary(_ results: [String: Liveness]) -> String {
        results.keys.sorted().map { name in
            let health = results[name] ?? .disabled
            return "\(name) \(health.state)" + (health.code.map { " (\($0.rawValue))" } ?? "")
        }.joined(separator: ", ")
    }
}
