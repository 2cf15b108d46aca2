import AgentCore
import Foundation
import Logging
import Platform
import Synchronization

/// Applies `[power]` at every maintenance round: reads /sys/class/power_supply (a handful of
/// small files), decides what the power state changes (PowerPolicy), tells the uploader,
/// and keeps the decision where the daemon's pause switches and `status` read it.
final class PowerGovernor: Sendable {
    private let database: AgentDatabase
    private let logger: Logger
    private let current = Mutex<PowerPolicy?>(nil)

    init(database: AgentDatabase, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// The latest decision, nil before the first pass or with `[power] enabled = false`.
    var policy: PowerPolicy? { current.withLock { $0 } }

    /// One pass; returns whether the decision changed.
    @discardableResult
    func pass(config: AgentConfig, uploader: (any UploadComponent)?) -> Bool {
        guard config.power.enabled else {
            let had = current.withLock { p -> Bool in defer { p = nil }; return p != nil }
            if had {
                uploader?.setPower(factor: 1, postponed: false)
                try? database.agentState.set(AgentStateKey.powerState, nil)
            }
            return had
        }
        let reading = PowerSupply.read(path: config.power.sysfsPath)
        let cap = config.storage.limits.queueCap(filesystemBytes: DiskSpace.totalBytes(at: database.path))
        let nearLimit = database.fileBytes() * 100 >= cap * Int64(config.power.queueNearLimitPercent)
        let policy = PowerPolicy(reading: reading, config: config.power, queueNearLimit: nearLimit)
        let old = current.withLock { p -> PowerPolicy? in defer { p = policy }; return p }
        uploader?.setPower(factor: policy.uploadFactor, postponed: policy.uploadsPostponed)
        guard old != policy else { return false }
        let effects = policy.effects(uploadInterval: config.upload.interval, config: config.power)
        let level = reading.batteryPercent.map { ", battery \($0) %" } ?? ""
        if old?.reading.source != reading.source || old?.microphonePaused != policy.microphonePaused || old?.uploadsPostponed != policy.uploadsPostponed {
            logger.notice("on \(reading.source.rawValue)\(level): \(effects.isEmpty ? "everything runs as configured" : effects.joined(separator: "; "))")
        }
        let stored = StoredPowerState(source: reading.source.rawValue, batteryPercent: reading.batteryPercent,
                                      batteryStatus: reading.batteryStatus, microphonePaused: policy.microphonePaused,
                                      uploadsPostponed: policy.uploadsPostponed, uploadFactor: policy.uploadFactor, effects: effects)
        do {
            try database.agentState.set(AgentStateKey.powerState, String(decoding: try JSONEncoder().encode(stored), as: UTF8.self))
        } catch {
            logger.warning("cannot store the power state for status: \(error)")
        }
        return true
    }
}
