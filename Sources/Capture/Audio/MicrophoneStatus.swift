import AgentCore
import Foundation
import Synchronization

/// What the microphone's parts on the capture thread make known, for the stream's
/// `status` to read from any thread: the capture's liveness, the device in use, the counters.
final class MicrophoneStatus: Sendable {
    struct Values: Sendable {
        /// The device's side of the stream's liveness (the writer's is the other).
        var captureLiveness: Liveness = .unhealthy(reason: "not started")
        var overruns = 0
        var opens = 0
        var silentDropped = 0
        var switches = 0
        var device = DeviceInUse(name: nil, reason: "not started", since: nil)
    }

    /// The device capture is on, why, and since when: `details()` for `status`.
    struct DeviceInUse: Sendable {
        var name: String?
        var reason: String
        var since: Date?
    }

    private let values = Mutex(Values())

    func current() -> Values { values.withLock { $0 } }

    /// Adds one to `counter`; returns its new total.
    @discardableResult
    func count(_ counter: WritableKeyPath<Values, Int>) -> Int {
        values.withLock { values in
            values[keyPath: counter] += 1
            return values[keyPath: counter]
        }
    }

    /// The device in use now (nil: none open) and why; `since` moves only when it changes.
    func setDevice(_ name: String?, reason: String, at now: Date) {
        values.withLock { values in
            if values.device.name != name { values.device.since = name == nil ? nil : now }
            values.device.name = name
            values.device.reason = reason
        }
    }

    /// Sets the capture's liveness; returns the one before.
    @discardableResult
    func setCaptureLiveness(_ liveness: Liveness) -> Liveness {
        values.withLock { values in
            defer { values.captureLiveness = liveness }
            return values.captureLiveness
        }
    }
}
