import AgentCore
import Foundation
import Logging
import Platform

/// Which source the location stream runs, from `[location] source`: the one place that
/// knows every kind. With `auto`, gpsd when it has a receiver; otherwise GeoClue, watching
/// gpsd until a receiver appears there (a laptop without one; docs/laptop.md).
public struct LocationSourceChooser: Sendable {
    let config: LocationConfig
    let tuning: LocationTuning
    let clock: any WallClock
    let logger: Logger
    let timeEvidence: TimeEvidence
    let serviceMode: ServiceMode

    /// The source to run and, with `auto`, why that one. Blocks for gpsd's answer with `auto`.
    func choose() -> (source: any LocationSource, reason: String?) {
        let gpsd = GPSDSource(config: config, tuning: tuning, clock: clock, logger: logger, timeEvidence: timeEvidence)
        switch config.source {
        case .gpsd:
            return (gpsd, nil)
        case .geoclue:
            return (geoClue(handover: nil), nil)
        case .auto:
            if Self.autoTakesGPSD(receivers: gpsd.receiverCount()) {
                return (gpsd, "gpsd at \(gpsd.address) has a receiver")
            }
            let handover = LocationHandover(next: gpsd, reason: "a receiver appeared at gpsd \(gpsd.address)",
                                            checkEvery: tuning.gpsdProbeInterval,
                                            isReady: { Self.autoTakesGPSD(receivers: gpsd.receiverCount()) })
            return (geoClue(handover: handover), "gpsd at \(gpsd.address) has no receiver")
        }
    }

    /// `auto`'s rule: gpsd when it answers and lists at least one receiver; a
    /// socket-activated gpsd with nothing plugged in (a laptop) answers with none.
    /// `receivers` is nil when gpsd did not answer.
    public static func autoTakesGPSD(receivers: Int?) -> Bool {
        (receivers ?? 0) > 0
    }

    private func geoClue(handover: LocationHandover?) -> GeoClueSource {
        GeoClueSource(config: config, tuning: tuning, actsAsItsOwnAgent: serviceMode == .system, handover: handover,
                      clock: clock, logger: logger)
    }
}
