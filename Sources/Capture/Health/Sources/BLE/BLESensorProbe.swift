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
        /// The address BlueZ has the sensor under, and its kind (`AddressType`).
        public var address: String?
        public var addressType: BLEAddressType?
        /// Notifications read (over `beatIntervalWindow`).
        public var notifications = 1
        /// Whether BlueZ offers its advertisement monitor, which finds the sensor within
        /// seconds once it is back; else the source looks with a discovery every 2 minutes.
        public var advertisementMonitor = false
    }

    public let target: BLESensorTarget
    public var tuning: BLETuning
    /// How long to wait for a notification once notifications are on.
    public var notificationTimeout: TimeInterval = 8
    /// How long notifications are read after the first before deciding whether the sensor
    /// sends beat intervals: below 60 bpm a notification may carry none, so one is not enough.
    public var beatIntervalWindow: TimeInterval = 5

    public init(target: BLESensorTarget, bus: DBusBus = .system) {
        self.target = target
        tuning = BLETuning()
        tuning.bus = bus
        tuning.scanSeconds = 8
        tuning.connectTimeout = 20
    }

    /// A reading, or why there is none (worded with what to do).
    public func run() -> Result<Reading, ProbeFailure> {
        let readings = Mutex<(all: [[UInt8]], battery: Int?)>(([], nil))
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
                readings.withLock { $0.all.append(bytes) }
                arrived.ring()
            }, onBattery: { percentage in readings.withLock { $0.battery = percentage } }))
        } catch {
            return .failure(ProbeFailure(description: error.description, needsPairing: error.asksForPairing))
        }
        defer { session.close(disconnect: true) }
        var deadline = Monotonic.now + notificationTimeout
        var windowSet = false
        while true {
            let count = readings.withLock { $0.all.count }
            if count > 0, !windowSet {
                deadline = Monotonic.now + beatIntervalWindow
                windowSet = true
            }
            let left = deadline - Monotonic.now
            if left <= 0 { break }
            _ = Poll.wait([arrived.fd, session.ended.fd], timeout: left)
            arrived.clear()
            if session.ended.isWoken { break }
        }
        let (all, battery) = readings.withLock { ($0.all, $0.battery) }
        guard let first = all.first else {
            if session.ended.isWoken {
                return .failure(ProbeFailure(description: (session.endedBy ?? .disconnected(target)).description))
            }
            return .failure(ProbeFailure(description: "\(target) connected but sent no heart rate within \(Int(notificationTimeout)) s: is it worn (moisten the strap's electrodes)?"))
        }
        do {
            let measurement = try HeartRateMeasurement(bytes: first)
            let withIntervals = all.contains { (try? HeartRateMeasurement(bytes: $0))?.rrIntervals.isEmpty == false }
            return .success(Reading(heartRate: measurement.heartRate, contact: measurement.contact,
                                    hasRRIntervals: withIntervals, battery: battery, name: session.deviceName,
                                    address: session.deviceAddress, addressType: session.deviceAddressType,
                                    notifications: all.count,
                                    advertisementMonitor: session.adapterOffersAdvertisementMonitor))
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
