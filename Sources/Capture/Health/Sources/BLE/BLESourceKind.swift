import AgentCore
import Foundation

/// `kind = "ble"`: a Bluetooth LE heart-rate sensor through BlueZ (`BLESource`).
public enum BLESourceKind: HealthSourceKind {
    public static func make(_ settings: BLESourceSettings, context: HealthSourceContext) -> any HealthSource {
        BLESource(config: settings, heartRateSeconds: context.health.bleHeartRateSeconds,
                  hrvWindowSeconds: context.health.hrvWindowSeconds, queue: context.queue,
                  commitInterval: context.commitInterval, tuning: context.bleTuning, clock: context.clock,
                  clockTrust: context.clockTrust, agentState: context.agentState, logger: context.logger)
    }

    /// Connect, wait for one heart rate, let go.
    public static func check(_ settings: BLESourceSettings, context: HealthCheckContext) -> DeviceCheck {
        let name = "health ble \(settings.address ?? settings.name)"
        return check(BLESensorProbe(target: BLESensorTarget(settings), bus: context.bus).run(), name: name)
    }

    /// How the sensor is found again once it was away (docs/streams/health.md#while-a-strap-is-away).
    private static func away(_ reading: BLESensorProbe.Reading) -> String {
        reading.advertisementMonitor ? "; when away, found again by BlueZ's advertisement monitor within seconds"
            : "; when away, looked for by a discovery every 2 minutes (BlueZ offers no advertisement monitor: Experimental = true in /etc/bluetooth/main.conf would)"
    }

    /// A probe's result as a check (`doctor`'s of a source, onboarding's of the sensor it
    /// sets up). No heart rate is a failure: the source would record nothing now (it
    /// keeps trying, so the fix is about the sensor, not the agent).
    public static func check(_ result: Result<BLESensorProbe.Reading, BLESensorProbe.ProbeFailure>, name: String) -> DeviceCheck {
        switch result {
        case .success(let reading):
            var detail = "notifies: \(reading.heartRate) bpm"
            if reading.contact == .notDetected { detail += " (no skin contact)" }
            detail += reading.hasRRIntervals ? ", with beat intervals (HRV)"
                : ", without beat intervals in \(reading.notifications) notification(s) (no HRV: optical sensors and most watches send none)"
            if let battery = reading.battery {
                detail += ", battery \(battery) %"
                if battery < BLESource.lowBattery {
                    return DeviceCheck(name: name, stream: .health, outcome: .warning, detail: detail + away(reading), fix: "charge or replace the sensor's battery")
                }
            }
            detail += away(reading)
            return DeviceCheck(name: name, stream: .health, outcome: .ok, detail: detail)
        case .failure(let failure):
            return DeviceCheck(name: name, stream: .health, outcome: .failed, detail: failure.description,
                               fix: "wear the sensor (wet a strap's electrodes, put it on) and check again with 'ariata-agent doctor'; a sensor connected to a phone or watch may not advertise: disconnect it there")
        }
    }
}

/// What a Bluetooth LE source counts beyond the common counters
/// (docs/streams/health.md#bluetooth-le-sensors).
public struct BLESourceStatus: HealthSourceKindStatus {
    /// The sensor's battery in percent, as BlueZ last reported it.
    public var battery: Int?
    /// Since when the sensor has been out of reach (nil while connected).
    public var disconnectedSince: Date?
    /// The last time the sensor was out of reach and came back.
    public var lastGap: Gap?
    /// Connections made since the agent started (1 + reconnections).
    public var connections = 0
    /// Variability windows without enough clean beats: nothing was sent for them.
    public var hrvWindowsDropped = 0
    /// Notifications the sensor sent while reporting no skin contact (left out).
    public var noContactReadings = 0
    /// The address in use: the configured one, or the adopted one.
    public var address: String?
    /// The address the sensor was found under by its advertised name, when it is not the
    /// configured one (kept in the agent's state).
    public var adoptedAddress: String?
    /// Connected, and no notification for `BLETuning.silenceLimit`.
    public var silent = false
    /// How the sensor was last watched while away: BlueZ's advertisement monitor, or discoveries.
    public var awayWatch: SensorStatus.AwayWatch?

    public struct Gap: Sendable, Equatable {
        public var from: Date
        public var to: Date
        public var seconds: Double { to.timeIntervalSince(from) }
    }

    public init() {}

    /// The sensor's line of `status` (its `sensors` in JSON).
    public func sensor(of status: HealthSourceStatus) -> SensorStatus? {
        SensorStatus(name: status.name, connected: status.liveness.isHealthy, battery: battery, disconnectedSince: disconnectedSince,
                     lastGapFrom: lastGap?.from, lastGapSeconds: lastGap.map { ($0.seconds * 10).rounded() / 10 },
                     hrvWindowsDropped: hrvWindowsDropped, noContactReadings: noContactReadings,
                     address: address, adoptedAddress: adoptedAddress,
                     state: silent ? .silent : status.liveness.isHealthy ? .connected : .away, awayWatch: awayWatch)
    }
}
