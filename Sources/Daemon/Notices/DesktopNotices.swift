import AgentCore
import Foundation
import Logging
import Synchronization

/// The maintenance round's part that tells the person at the laptop what only they can fix:
/// reads the conditions from what the round saw, sends each notice once per episode
/// (docs/laptop.md#desktop-notices). It outlives reloads, so a reload does not repeat a
/// notice whose condition lasts.
final class DesktopNotices: Sendable {
    private let mode: ServiceMode
    private let logger: Logger
    private let sink: (any NoticeSink)?
    private let state = Mutex(State())

    private struct State {
        var episodes = NoticeEpisodes()
        var on: Bool?
    }

    /// - Parameters:
    ///   - sink: where the notices go; nil sends none.
    ///   - mode: the user service sends notices unless the file says otherwise (`NotifyConfig`).
    init(sink: (any NoticeSink)?, mode: ServiceMode = .current(), logger: Logger) {
        self.sink = sink
        self.mode = mode
        self.logger = logger
    }

    /// One round's look: what holds now, and the notices that are due sent.
    func check(_ seen: @autoclosure () -> NoticeObservation, config: NotifyConfig) {
        let on = config.isOn(as: mode)
        let changed = state.withLock { s -> Bool in
            defer { s.on = on }
            if !on { s.episodes.reset() }
            return s.on != on
        }
        if changed {
            logger.info(on ? "desktop notices on (\(config.enabled == nil ? "the user service" : "[notify] enabled = true"))"
                           : "desktop notices off (\(config.enabled == nil ? "the system service" : "[notify] enabled = false"))")
        }
        guard on, let sink else { return }
        let active = NoticeConditions.active(seen())
        let due = state.withLock { $0.episodes.due(active) }
        for notice in due { sink.send(notice) }
    }
}
