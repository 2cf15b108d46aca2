import Foundation
import GRDB

/// What one of the supervisor's checks writes for `status`: the liveness of the components
/// that changed (or are due a fresh `checked_at`) and the counters that changed, in one
/// transaction, so a check costs at most one commit (one WAL append and fsync), not one per
/// component. Stored in the `component_health` table (its name since schema 1: a rename
/// would need a migration and buy nothing a reader sees).
public struct LivenessCheckWrite: Sendable, Equatable {
    public var liveness: [String: Liveness] = [:]
    public var state: [String: String] = [:]

    public init(liveness: [String: Liveness] = [:], state: [String: String] = [:]) {
        self.liveness = liveness
        self.state = state
    }

    public var isEmpty: Bool { liveness.isEmpty && state.isEmpty }
}

extension AgentStateStore {
    public func store(_ check: LivenessCheckWrite) throws {
        guard !check.isEmpty else { return }
        let now = clock.now().timeIntervalSince1970
        try writing {
            try connection.write { db in
                let health = try db.cachedStatement(sql: """
                    INSERT INTO component_health (component, state, reason, code, checked_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (component) DO UPDATE SET state = excluded.state, reason = excluded.reason,
                        code = excluded.code, checked_at = excluded.checked_at
                    """)
                for (component, value) in check.liveness.sorted(by: { $0.key < $1.key }) {
                    try health.execute(arguments: [component, value.state, value.reason, value.code?.rawValue, now])
                }
                let state = try db.cachedStatement(sql: """
                    INSERT INTO agent_state (key, value, updated_at) VALUES (?, ?, ?)
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                    """)
                for (key, value) in check.state.sorted(by: { $0.key < $1.key }) {
                    try state.execute(arguments: [key, value, now])
                }
            }
        }
    }
}
