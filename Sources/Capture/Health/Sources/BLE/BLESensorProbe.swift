import AgentCore
import DBus
import Foundation
import Platform
import Synchronization

/// Connects to a configured sensor once and waits for a notification: what `doctor`
/// checks, through the same session the source uses, so the check cannot pass
/// where the source would fail. The sensor is let go again afterwards.
public struct BLESensorProbe: Sendable {
    public struct Reading: Sendable, Equatable {
        public var heartRate: Int
        public var contact: HeartRateMeasurement.Contact
        public var hasRRIntervals: Bool
        public var battery: Int?
        /// The name the sensor advertises, when BlueZ has one.
        public var name: String?
    }

    public let target: BLESensorTarget
    public var tuning: BLETuning
    /// How long to wait for a notification once notifications are on.
    public var notificationTimeout: TimeInterval = 8

    public init(target: BLESensorTarget, bus: DBusBus = .system) {
        self.target = target
        tuning = BLETuning()
        tuning.bus = bus
        tuning.scanSeconds = 8
        tuning.connectTimeout = 20
    }

    /// A reading, or why there is none (worded with what to do).
    public func run() -> Result<Reading, ProbeFailure> {
        let readings = Mutex<(bytes: [UInt8]?, battery: Int?)>((nil, nil))
        let stop: Waker
        let arrived: Doorbell
        do {
            stop = try Waker()
            arrived = try Doorbell()
        } catch {
            return .failure(ProbeFailure(description: "cannot make a wake-up descriptor: \(error)"))
        }
        let session: BlueZSensorSession
        do {
            session = try BlueZSensorSession(target: target, tuning: tuning, stop: stop, handlers: .init(onValue: { bytes in
                readings.withLock { if $0.bytes == nil { $0.bytes = bytes } }
                arrived.ring()
            }, onBattery: { percentage in readings.withLock { $0.battery = percentage } }))
        } catch {
            return .failure(ProbeFailure(description: error.description, needsPairing: error.asksForPairing))
        }
        defer { session.close(disconnect: true) }
        let deadline = Monotonic.now + notificationTimeout
        while readings.withLock({ $0.bytes == nil }) {
            let left = deadline - Monotonic.now
            guard left > 0 else {
                return .failure(ProbeFailure(description: "\(target) connected but sent no heart rate within \(Int(notificationTimeout)) s: is it worn (moisten the strap's electrodes)?"))
            }
            _ = Poll.wait([arrived.fd, session.ended.fd], timeout: left)
            arrived.clear()
            if session.ended.isWoken, readings.withLock({ $0.bytes == nil }) {
                return .failure(ProbeFailure(description: (session.endedBy ?? .disconnected(target)).description))
            }
        }
        let (bytes, battery) = readings.withLock { ($0.bytes ?? [], $0.battery) }
        do {
            let measurement = try HeartRateMeasurement(bytes: bytes)
            return .success(Reading(heartRate: measurement.heartRate, contact: measurement.contact,
                                    hasRRIntervals: !measurement.rrIntervals.isEmpty, battery: battery,
                                    name: session.deviceName))
        } catch {
            return .failure(ProbeFailure(description: "\(target) sent a notification that is not a heart rate measurement: \(error.description)"))
        }
    }

    public struct ProbeFailure: Error, Equatable, CustomStringConvertible {
        public var description: String
        /// The sensor refused notifications until it is paired (bonded): onboarding pairs
        /// it and checks again.
        public var needsPairing = false

        public init(description: String, needsPairing: Bool = false) {
            self.description = description
            self.needsPairing = needsPairing
        }
    }
}
