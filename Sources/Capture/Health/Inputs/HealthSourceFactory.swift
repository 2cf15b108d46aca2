import AgentCore
import Foundation
import Logging
import Platform

/// Makes the source a `[[health.source]]` entry asks for.
public enum HealthSourceFactory {
    public static func make(_ config: HealthSourceConfig, queue: any HealthRecordQueue, commitInterval: TimeInterval,
                            clock: any WallClock, clockTrust: ClockTrust = .live(trustSystemClock: false),
                            bleTuning: BLETuning = BLETuning(), logger: Logger) -> any HealthSource {
        switch config.kind {
        case .file:
            return FileSource(config: config, queue: queue, commitInterval: commitInterval, clock: clock,
                                  clockTrust: clockTrust, logger: logger)
        case .serial:
            return SerialSource(config: config, queue: queue, clock: clock, clockTrust: clockTrust, logger: logger)
        case .ble:
            return BLESource(config: config, queue: queue, commitInterval: commitInterval, tuning: bleTuning, clock: clock,
                             clockTrust: clockTrust, logger: logger)
        }
    }
}
