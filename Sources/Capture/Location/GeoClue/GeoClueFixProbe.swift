import AgentCore
import DBus
import Foundation
import Synchronization

/// One fix from GeoClue, the way the stream gets its fixes (a session with the stream's
/// settings), for `doctor` and `onboard`: they report what GeoClue gives this machine now
/// rather than the accuracy it claims to be able to give.
public enum GeoClueFixProbe {
    /// The first fix within `timeout`, nil when none came; throws what keeps GeoClue from
    /// answering (not installed, not allowed, no desktop agent).
    public static func firstFix(bus: DBusBus = .system, accuracy: LocationConfig.AccuracyLevel, actsAsItsOwnAgent: Bool,
                                timeout: TimeInterval) throws(GeoClueProblem) -> LocationFix? {
        let first = FirstFix()
        // No time threshold: the first fix GeoClue has is the one wanted.
        let settings = GeoClueSettings(accuracy: accuracy, timeThreshold: 0, distanceThreshold: 0,
                                       actsAsItsOwnAgent: actsAsItsOwnAgent, startTimeout: min(timeout, 25))
        let session = try GeoClueSession(bus: bus, settings: settings) { fix in first.offer(fix.fix) }
        defer { session.close() }
        _ = first.arrived.wait(timeout: .now() + timeout)
        return first.fix.withLock { $0 }
    }

    /// The first fix, kept from the session's bus thread for the waiting one.
    private final class FirstFix: Sendable {
        let fix = Mutex<LocationFix?>(nil)
        let arrived = DispatchSemaphore(value: 0)

        func offer(_ offered: LocationFix) {
            let isFirst = fix.withLock { taken -> Bool in
                guard taken == nil else { return false }
                taken = offered
                return true
            }
            if isFirst { arrived.signal() }
        }
    }
}
