import AgentCore
import Foundation
import Logging
import Platform
import Synchronization
import Upload

/// Hands what the metered watch hears to the uploader and keeps it for `status` and the
/// metrics (docs/laptop.md#metered-networks). It outlives reloads, so a state that lasts
/// (NetworkManager not running, say) is said once in the log, not at every reload.
final class MeteredUploads: Sendable {
    private let database: AgentDatabase
    private let clock: any WallClock
    private let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var watch: (any MeteredNetworkWatch)?
        var uploader: (any UploadComponent)?
        var onMetered = OnMetered.small
        var meteredNetworks: [String] = []
        /// The last state decided (kept across reloads) and since when.
        var last: Decided?
        var since: Date?
    }

    /// What the watch heard, as the rules decide it.
    private enum Decided: Equatable {
        case watched(MeteredVerdict)
        case unwatched(reason: String)

        var metered: Bool {
            if case .watched(let verdict) = self { return verdict.metered == true }
            return false
        }
    }

    init(database: AgentDatabase, clock: any WallClock, logger: Logger) {
        self.database = database
        self.clock = clock
        self.logger = logger
    }

    /// Starts `watch` for `uploader`, before the uploader's first cycle. With
    /// `on_metered = "all"` there is nothing to hold back and nothing is watched.
    func start(_ watch: (any MeteredNetworkWatch)?, config: AgentConfig, uploader: any UploadComponent) {
        state.withLock { s in
            s.uploader = uploader
            s.onMetered = config.upload.onMetered
            s.meteredNetworks = config.upload.meteredNetworks
        }
        guard let watch else { return }
        guard config.upload.onMetered != .all else {
            apply(.unwatched(reason: "[upload] on_metered = \"all\": every stream goes on any network, so metering is not watched"))
            return
        }
        state.withLock { $0.watch = watch }
        watch.start { [weak self] in self?.apply($0) }
    }

    func stop() {
        let watch = state.withLock { s -> (any MeteredNetworkWatch)? in
            defer {
                s.watch = nil
                s.uploader = nil
            }
            return s.watch
        }
        watch?.stop()
    }

    private func apply(_ heard: MeteredNetworkState) {
        let now = clock.now()
        let (uploader, onMetered, previous, decided, since) = state.withLock { s in
            let decided: Decided
            switch heard {
            case .watched(let reading):
                decided = .watched(MeteredVerdict.decide(reading, meteredNetworks: s.meteredNetworks))
            case .unwatched(let reason):
                decided = .unwatched(reason: reason)
            }
            let previous = s.last
            if previous != decided {
                s.last = decided
                s.since = now
            }
            return (s.uploader, s.onMetered, previous, decided, s.since ?? now)
        }
        uploader?.setMetered(decided.metered)
        if previous != decided {
            switch decided {
            case .watched(let verdict):
                logger.info("\(verdict.text)")
            case .unwatched(let reason):
                logger.notice("metering unknown: \(reason); uploads go as on any network")
            }
        }
        let held = MeteredUploadRule.deferred(onMetered: onMetered, metered: decided.metered).map(\.rawValue).sorted()
        let stored: StoredMeteredState
        switch decided {
        case .watched(let verdict):
            stored = StoredMeteredState(watchedBy: NetworkManagerMeteredWatch.name, metered: verdict.metered, value: verdict.value,
                                        problem: nil, since: since, deferredStreams: held, decidedBy: verdict.rule.rawValue,
                                        decision: verdict.reason, connection: verdict.connection, ssid: verdict.ssid,
                                        devices: verdict.devices, vpn: verdict.tunnel)
        case .unwatched(let reason):
            stored = StoredMeteredState(watchedBy: nil, metered: nil, value: nil, problem: reason, since: since, deferredStreams: [])
        }
        do {
            try StoredMeteredState.store(stored, in: database)
        } catch {
            logger.warning("cannot store the metered state for status: \(error)")
        }
    }
}
