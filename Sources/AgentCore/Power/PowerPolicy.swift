import Foundation
import Platform

/// What the power state changes, decided from a reading and `[power]`.
public struct PowerPolicy: Sendable, Equatable {
    public var reading: PowerReading
    /// The upload interval is multiplied by this (1 on mains).
    public var uploadFactor: Int
    /// The battery is below `low_battery_percent`: the microphone pauses.
    public var microphonePaused: Bool
    /// Uploads wait for mains (low battery, and the queue not near its cap).
    public var uploadsPostponed: Bool

    public init(reading: PowerReading, config: PowerConfig, queueNearLimit: Bool) {
        self.reading = reading
        let onBattery = config.enabled && reading.source == .battery
        let low = onBattery && config.lowBatteryPercent > 0 && (reading.batteryPercent.map { $0 < config.lowBatteryPercent } ?? false)
        uploadFactor = onBattery ? config.batteryUploadFactor : 1
        microphonePaused = low
        uploadsPostponed = low && !queueNearLimit
    }

    /// What changed, for the log and `status`; empty on mains.
    public func effects(uploadInterval: Int, config: PowerConfig) -> [String] {
        var effects: [String] = []
        let level = reading.batteryPercent.map { "\($0) %" } ?? "unknown"
        if uploadFactor > 1 && !uploadsPostponed {
            effects.append("uploads every \(uploadInterval * uploadFactor) s instead of \(uploadInterval) s (on battery)")
        }
        if microphonePaused { effects.append("microphone paused (battery \(level), below \(config.lowBatteryPercent) %)") }
        if uploadsPostponed { effects.append("uploads wait for mains (battery \(level), below \(config.lowBatteryPercent) %)") }
        if microphonePaused && !uploadsPostponed {
            effects.append("uploads go on despite the low battery: the queue is near its limit")
        }
        return effects
    }
}
