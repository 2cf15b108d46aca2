import AgentCore
import Foundation
import Platform

/// Which audio chunks got their time from a clock that could not be believed, and where
/// each began on the boot clock. A run of audio is timed from one anchor (the wall clock
/// when it began, or when it was retimed) and counted forward by samples; a chunk belongs
/// to the anchor in force when it began, so a clock that is stepped right (NTP) in the
/// middle of a chunk cannot make that chunk pass for a trusted one.
///
/// Lives on the capture thread only. A class: the chunk assembly anchors the timeline and
/// takes a finished chunk's time, the encoder maker (`JournaledEncoderMaker`) places each
/// chunk that begins, and both must see one timeline.
final class ChunkTimes {
    private struct Anchor {
        var wall: Date
        /// The boot clock at `wall`; nil when the clock was believed (nothing to correct).
        var boot: BootInstant?
        var trusted: Bool
    }

    private let trust: ClockTrust
    private var anchor: Anchor?
    private var chunks: [UUID: ProvisionalTime] = [:]

    init(trust: ClockTrust) {
        self.trust = trust
    }

    /// The run's timeline (re)starts: its next sample was captured `lag` seconds before
    /// `now`, at wall time `now - lag`.
    func anchored(now: Date, lag: TimeInterval) {
        let trusted = trust.isTrusted(now: now)
        var boot = trusted ? nil : BootClock.now()
        boot?.seconds -= lag
        anchor = Anchor(wall: now.addingTimeInterval(-lag), boot: boot, trusted: trusted)
    }

    /// A chunk begins at `start` on the current timeline; returns its provisional time (nil
    /// when the clock is believed), which the audio journal keeps beside its pages.
    @discardableResult
    func began(_ id: UUID, start: Date) -> ProvisionalTime? {
        guard let anchor, !anchor.trusted else { return nil }
        let provisional = anchor.boot.map {
            ProvisionalTime(bootID: $0.bootID, bootTime: $0.seconds + start.timeIntervalSince(anchor.wall))
        } ?? ProvisionalTime(bootID: ProvisionalTime.unknownBoot, bootTime: 0)
        chunks[id] = provisional
        return provisional
    }

    /// The provisional time of a finished chunk (nil when its time can be believed); forgets it.
    func take(_ id: UUID) -> ProvisionalTime? {
        chunks.removeValue(forKey: id)
    }
}
