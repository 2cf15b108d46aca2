import AgentCore
import Foundation

/// Which device the microphone stream captures from: the chosen one (`[microphone]
/// device`), or the fallback while the chosen one is missing, with the chosen one tried
/// again every `retryInterval` seconds while on the fallback (docs/streams/microphone.md,
/// "Choosing the device, and falling back"). Capture thread only.
struct DeviceSelection {
    let chosen: String
    /// nil: no fallback (`fallback_device = ""` or `"none"`, or the chosen device itself).
    let fallback: String?
    let retryInterval: TimeInterval
    private(set) var onFallback = false
    /// When the chosen device is tried next (monotonic seconds), while on the fallback.
    private var nextTry: TimeInterval = 0

    init(config: MicrophoneConfig, retryInterval: TimeInterval) {
        chosen = config.device
        fallback = config.fallback
        self.retryInterval = retryInterval
    }

    /// Only a missing device is stood in for: a busy or forbidden one is the person's to
    /// fix, and capturing from another microphone would hide it.
    func fallsBack(after error: AudioCaptureError) -> Bool {
        fallback != nil && error.kind == .notFound
    }

    /// Capture moved to the fallback (or reopened it) at `now`; true when this is a switch.
    mutating func usingFallback(now: TimeInterval) -> Bool {
        defer {
            onFallback = true
            nextTry = now + retryInterval
        }
        return !onFallback
    }

    /// Capture is on the chosen device; true when it came back from the fallback.
    mutating func usingChosen() -> Bool {
        defer { onFallback = false }
        return onFallback
    }

    /// While on the fallback: is it time to try the chosen device again?
    func chosenDue(now: TimeInterval) -> Bool {
        onFallback && now >= nextTry
    }

    mutating func chosenStillMissing(now: TimeInterval) {
        nextTry = now + retryInterval
    }

    /// What `status` says about the fallback while capture is on it.
    func fallbackReason(_ error: AudioCaptureError) -> String {
        "fallback: the chosen device '\(chosen)' is missing (\(error.detail)); it is tried again every \(Int(retryInterval.rounded())) s and used again when it returns"
    }
}
