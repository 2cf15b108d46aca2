import AgentCore
import Foundation
import Logging
import Synchronization

/// Something whose health the coordinator asks for and may restart: each capture stream
/// and the uploader.
public protocol SupervisedComponent: AnyObject, Sendable {
    var componentName: String { get }
    func health() -> StreamHealth
    /// Stops and starts the component again (after it reported unhealthy).
    func restart()
    /// Running totals for `status` (see `StreamCounter`); empty for most components.
    func counters() -> [String: Int]
}

extension SupervisedComponent {
    public func counters() -> [String: Int] { [:] }
}

/// One timer for the whole daemon (no stream keeps its own): on every tick it asks each
/// component for its health, stores it where `status` reads it, restarts a component
/// that stayed unhealthy for two ticks in a row, and tells systemd all is alive.
public final class HealthCoordinator: Sendable {
    private let components: Mutex<[any SupervisedComponent]>
    private let store: SQLiteQueue
    private let notifier: SystemdNotifier
    private let logger: Logger
    /// Consecutive unhealthy ticks per component. A component gets one tick to recover by
    /// itself (streams reconnect on their own) before it is restarted.
    private let strikes = Mutex<[String: Int]>([:])
    private let restartAfterStrikes: Int
    /// Counters last written, so unchanged ones are not rewritten every tick.
    private let storedCounters = Mutex<[String: Int]>([:])

    public init(components: [any SupervisedComponent], store: SQLiteQueue, notifier: SystemdNotifier,
                restartAfterStrikes: Int = 2, logger: Logger) {
        self.components = Mutex(components)
        self.store = store
        self.notifier = notifier
        self.restartAfterStrikes = restartAfterStrikes
        self.logger = logger
    }

    public func replaceComponents(_ new: [any SupervisedComponent]) {
        components.withLock { $0 = new }
        strikes.withLock { $0 = [:] }
    }

    /// One round of checks. Returns the health of each component, by name.
    @discardableResult
    public func tick(summary: (([String: StreamHealth]) -> String)? = nil) -> [String: StreamHealth] {
        let current = components.withLock { $0 }
        var results: [String: StreamHealth] = [:]
        for component in current {
            let name = component.componentName
            let health = component.health()
            results[name] = health
            do {
                try store.storeHealth(component: name, health)
            } catch {
                logger.error("cannot store the health of \(name): \(error)")
            }
            storeCounters(of: component)
            let count = strikes.withLock { table -> Int in
                table[name] = health.isHealthy || health == .disabled ? 0 : (table[name] ?? 0) + 1
                return table[name] ?? 0
            }
            if count == 1 {
                logger.warning("\(name) is \(health)")
            } else if count >= restartAfterStrikes {
                logger.warning("\(name) still \(health): restarting it")
                component.restart()
                strikes.withLock { $0[name] = 0 }
            }
        }
        notifier.watchdog()
        notifier.status(summary?(results) ?? Self.summary(results))
        return results
    }

    /// Writes a component's counters for `status`, those that changed since the last tick.
    private func storeCounters(of component: any SupervisedComponent) {
        for (counter, value) in component.counters() {
            let key = StreamCounter.key(component.componentName, counter)
            let changed = storedCounters.withLock { stored -> Bool in
                defer { stored[key] = value }
                return stored[key] != value
            }
            guard changed else { continue }
            do {
                try store.setState(key, String(value))
            } catch {
                storedCounters.withLock { $0[key] = nil }
                logger.error("cannot store \(key): \(error)")
            }
        }
    }

    /// A one-line summary for `systemctl status`: "location healthy, microphone paused, …".
    public static func summary(_ results: [String: StreamHealth]) -> String {
        results.keys.sorted().map { name in
            let health = results[name] ?? .disabled
            return "\(name) \(health.state)" + (health.code.map { " (\($0.rawValue))" } ?? "")
        }.joined(separator: ", ")
    }
}
