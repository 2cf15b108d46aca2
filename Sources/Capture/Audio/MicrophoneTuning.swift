import AgentCore
import Foundation

/// The microphone stream's internal timings and sizes that users do not need to tune (the
/// user's knobs live in `[microphone]`), in one place. Tests pass their own.
///
/// The ALSA device's own request (period, ring buffer, wake-up size, the stall rule) is
/// `ALSACapture`'s: onboard and doctor open devices through the same factory.
public struct MicrophoneTuning: Sendable, Equatable {
    /// Frames per second captured and encoded (mono): Opus's wideband, what speech needs.
    public var sampleRate: Int
    /// Waits between attempts to open a failing device: 1 s doubling to 30 s, so a missing
    /// microphone costs a wake-up every half minute, not a spin.
    public var deviceRetry: Backoff
    /// How often the chosen device is tried again while capture is on the fallback: what
    /// a microphone plugged back in waits at most before it is used again.
    public var chosenDeviceRetry: TimeInterval
    /// When the sample-counted capture time and the wall clock disagree by more than this
    /// (NTP set the clock, the sound card's clock drifted), chunks not yet begun are timed
    /// from the wall clock again. nil keeps the sample count only: for recorded input that
    /// is read faster than real time (tests, benchmarks).
    public var maxClockSkew: TimeInterval?
    /// Frames one read of the device may bring: what one wake of the ALSA device gathers
    /// (`ALSACapture.defaultWakeFrames`, 2 s).
    public var readFrames: Int
    /// Finished chunks kept in memory while the queue refuses them (disk full), about ten
    /// minutes of audio; beyond that the oldest is dropped from memory (it stays in the
    /// audio journal, when on, until the next start).
    public var maxChunksWaiting: Int

    public init(sampleRate: Int = 16_000, deviceRetry: Backoff = Backoff(base: 1, cap: 30),
                chosenDeviceRetry: TimeInterval = 5, maxClockSkew: TimeInterval? = 2,
                readFrames: Int = ALSACapture.defaultWakeFrames, maxChunksWaiting: Int = 20) {
        self.sampleRate = sampleRate
        self.deviceRetry = deviceRetry
        self.chosenDeviceRetry = chosenDeviceRetry
        self.maxClockSkew = maxClockSkew
        self.readFrames = readFrames
        self.maxChunksWaiting = maxChunksWaiting
    }
}
