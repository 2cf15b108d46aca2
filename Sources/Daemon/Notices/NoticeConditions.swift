import AgentCore
import Foundation

/// What the daemon sees at a maintenance round that a person at the laptop may have to act
/// on: read from the states the daemon keeps anyway (the storage guard, the supervisor's
/// liveness of the uploader and the microphone, the server's switches).
struct NoticeObservation: Sendable {
    /// Free bytes on the queue's file system (nil: not known).
    var freeDiskBytes: Int64?
    /// The storage guard's floor is broken (E004): the queue no longer grows.
    var belowFloor = false
    /// `[storage] min_free_mb`, for the words.
    var floorMB = 100
    /// The directory of the queue, where space must be freed.
    var queueDirectory: String
    /// The uploader's liveness (E002 when the server refused the token).
    var uploader: Liveness?
    /// The microphone stream while it should capture (enabled, not paused): its liveness
    /// and the device it reads from ("" while none is open); nil otherwise.
    var microphone: (health: Liveness, deviceInUse: String?)?
    /// `[microphone] fallback_device` in force (nil: none).
    var microphoneFallback: String?
    /// Streams the file turns on and the server switched off, with the server's reason.
    var switchedOff: [StreamName: String] = [:]
    /// False while the server has no stream switched on for this device yet.
    var configurationComplete = true
}

/// The notices whose condition holds now, each with its remedy (docs/laptop.md#desktop-notices).
enum NoticeConditions {
    /// Below this much free disk a notice goes whatever the floor (the iOS collector warns
    /// at the same figure).
    static let lowDiskBytes: Int64 = 50 * 1_048_576

    static func active(_ seen: NoticeObservation) -> [DesktopNotice] {
        [storage(seen), token(seen), microphone(seen)].compactMap { $0 } + switchedOff(seen)
    }

    static func storage(_ seen: NoticeObservation) -> DesktopNotice? {
        let low = seen.freeDiskBytes.map { $0 < lowDiskBytes } ?? false
        guard low || seen.belowFloor else { return nil }
        let free = seen.freeDiskBytes.map { "Only \($0 / 1_048_576) MB free" } ?? "The disk is full"
        let floor = seen.belowFloor ? ", below the agent's floor of \(seen.floorMB) MB ([storage] min_free_mb)" : ""
        return DesktopNotice(
            key: "storage", summary: "Ariata: the disk is almost full",
            body: "\(free) under \(seen.queueDirectory)\(floor) (\(AgentErrorCode.storageFull.rawValue)). "
                + "What is not uploaded yet is kept, but new recordings now replace the oldest ones. "
                + "Free disk space there; the agent carries on by itself.",
            urgent: true)
    }

    static func token(_ seen: NoticeObservation) -> DesktopNotice? {
        guard let uploader = seen.uploader, uploader.code == .invalidToken else { return nil }
        return DesktopNotice(
            key: "token", summary: "Ariata: the server refused this device's token",
            body: "\(AgentErrorCode.invalidToken.rawValue): uploads are paused and nothing recorded is lost. "
                + "To fix it, get a new device token from the server and run 'ariata-agent onboard --user-service' again.",
            urgent: true)
    }

    static func microphone(_ seen: NoticeObservation) -> DesktopNotice? {
        // No device open and failing: the chosen microphone is gone and no fallback stands
        // in. A chunk that cannot be written is the storage notice's, not this one.
        guard let (health, device) = seen.microphone, health.isUnhealthy,
              health.code != .storageFull, device?.isEmpty == true, let reason = health.reason else { return nil }
        let fallback = seen.microphoneFallback == nil
            ? " No fallback is set: [microphone] fallback_device names a microphone to record from meanwhile." : ""
        return DesktopNotice(key: "microphone", summary: "Ariata: the microphone is not recording",
                             body: "\(reason).\(fallback)", confirmRounds: 2)
    }

    static func switchedOff(_ seen: NoticeObservation) -> [DesktopNotice] {
        guard !seen.switchedOff.isEmpty else { return [] }
        guard seen.configurationComplete else {
            return [DesktopNotice(key: "switched-off", summary: "Ariata: nothing is recorded yet",
                                  body: sentence(ServerSwitches.notConfiguredReason))]
        }
        return StreamName.allCases.filter { seen.switchedOff[$0] != nil }.map { stream in
            DesktopNotice(key: "switched-off.\(stream.rawValue)", summary: "Ariata: the server switched \(stream.rawValue) off",
                          body: "\(stream.rawValue.capitalized) is not recorded: the server switched it off in its web UI. "
                              + "Switch it on there to record again: the agent asks every hour, "
                              + "or at once after 'systemctl --user reload ariata-agent'.")
        }
    }

    /// "the server has …" → "The server has ….".
    private static func sentence(_ text: String) -> String {
        (text.first.map { String($0).uppercased() + text.dropFirst() } ?? text) + "."
    }
}
