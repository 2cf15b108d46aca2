import AgentCore
import Foundation
import Platform

/// When the agent holds a GeoClue client: all along, or for one fix at a time
/// (`[location] geoclue_mode`). GeoClue scans Wi-Fi every 10 s for as long as a client
/// holds street accuracy or finer, and every 300 s only below it, where it also moves the
/// position by a kilometre or two on purpose: no level both keeps the position and scans
/// less. Taking one fix and letting go does (docs/laptop.md, "GeoClue at a laptop's cost").
struct GeoCluePacing: Sendable {
    var mode: LocationConfig.GeoClueMode
    /// Seconds from one per-fix start to the next.
    var fixInterval: TimeInterval
    /// How long one per-fix client waits for its fix before it lets go without one.
    var fixTimeout: TimeInterval
    /// How often `auto` looks at the power supply while it holds a client.
    var powerCheckEvery: TimeInterval
    /// Whether the machine runs on battery now (`[power]`'s reading; false without one).
    var onBattery: @Sendable () -> Bool

    init(config: LocationConfig, tuning: LocationTuning) {
        mode = config.geoclueMode
        fixInterval = tuning.geoClueFixInterval ?? TimeInterval(config.geoclueFixInterval)
        fixTimeout = tuning.geoClueFixTimeout
        powerCheckEvery = tuning.powerCheckInterval
        let path = tuning.powerSupplyPath
        onBattery = { path.map { PowerSupply.read(path: $0).source == .battery } ?? false }
    }

    /// Whether the client is to be let go between fixes now.
    func perFix() -> Bool {
        switch mode {
        case .hold: false
        case .perFix: true
        case .auto: onBattery()
        }
    }
}
