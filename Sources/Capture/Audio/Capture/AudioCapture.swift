import AgentCore

/// The capture source seam of the microphone stream: something that yields blocks of
/// 16-bit mono samples. `ALSACapture` is the real one; a stream's logic can run over any
/// source (a recording with a known end, say).
///
/// A capture is used from one thread only (the stream's capture thread), so it need not
/// be Sendable.
public protocol AudioCapture: AnyObject {
    /// Frames per second of the samples `read` yields.
    var sampleRate: Int { get }
    /// Waits for samples (at most about a second) and copies them into `buffer`.
    /// Throws `AudioCaptureError` when the device is gone or broken.
    func read(into buffer: UnsafeMutableBufferPointer<Int16>) throws(AudioCaptureError) -> CaptureRead
    /// Frames captured by the device but not yet read: how far behind real time the next
    /// `read` starts.
    func pendingFrames() -> Int
    /// Releases the device. Reads after `close` throw.
    func close()
    /// What the device granted, for the log.
    var settingsDescription: String { get }
}

extension AudioCapture {
    public var settingsDescription: String { "\(sampleRate) Hz mono S16_LE" }
}

/// What one `read` produced.
public enum CaptureRead: Sendable, Equatable {
    /// `count` frames were copied (0 when none arrived before the wait ended).
    case frames(Int)
    /// The device overran (the reader fell behind, an xrun) and was recovered: samples were
    /// lost between the previous read and the next, so the audio is not continuous there.
    case overrun
    /// The source has no more samples (a recording; a live device never ends).
    case ended
}

/// Opens a capture for an ALSA device name; the stream calls it again to retry.
public typealias AudioCaptureFactory = @Sendable (_ device: String, _ sampleRate: Int) throws(AudioCaptureError) -> any AudioCapture
