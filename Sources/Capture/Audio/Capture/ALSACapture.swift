import AgentCore
import CALSA
import Glibc

/// Captures 16-bit mono samples from an ALSA PCM through libasound.
///
/// Period and buffer: the device is asked for 1 s periods in an 8 s ring buffer, and the
/// reader is woken when 2 s are there (`avail_min`, two periods). The capture thread then
/// wakes once every 2 s instead of the 100 times a second of a 10 ms period, which is what
/// keeps an idle SBC idle. The buffer is the slack: the thread can be held up for 6 s
/// beyond a wake (the audio journal's fdatasync on a slow SD card, which runs on this
/// thread; a loaded machine) before an overrun drops audio. Latency does not matter for
/// 30 s chunks. All are requests ("near"); the sizes the device grants are logged.
///
/// The PCM is opened non-blocking and waited on with `snd_pcm_wait` and a 2.5 s time-out
/// (a live device never times out between two wakes), so a stop or pause is seen within
/// 2 s, and within 2.5 s when a device stops delivering.
public final class ALSACapture: AudioCapture {
    public static let defaultPeriodFrames = 16_000
    public static let defaultBufferFrames = 128_000
    /// Frames the device gathers before it wakes the reader (2 s), and what one read takes.
    public static let defaultWakeFrames = 32_000
    /// How long one wait may take.
    static let waitMilliseconds: Int32 = 2_500
    /// Waits in a row without a sample after which the device counts as stalled (10 s).
    static let stalledAfterEmptyWaits = 4

    public let device: String
    public let sampleRate: Int
    public private(set) var periodFrames: Int
    public private(set) var bufferFrames: Int
    public private(set) var wakeFrames: Int
    private var pcm: OpaquePointer?
    private var emptyWaits = 0

    public init(device: String, sampleRate: Int = 16_000,
                periodFrames: Int = ALSACapture.defaultPeriodFrames,
                bufferFrames: Int = ALSACapture.defaultBufferFrames,
                wakeFrames: Int = ALSACapture.defaultWakeFrames) throws(AudioCaptureError) {
        self.device = device
        self.sampleRate = sampleRate
        self.periodFrames = periodFrames
        self.bufferFrames = bufferFrames
        self.wakeFrames = wakeFrames
        var handle: OpaquePointer?
        let opened = snd_pcm_open(&handle, device, SND_PCM_STREAM_CAPTURE, SND_PCM_NONBLOCK)
        guard opened >= 0, let handle else {
            throw AudioCaptureError(errno: opened, device: device, detail: "snd_pcm_open: \(Self.message(opened))")
        }
        pcm = handle
        do {
            try configure(handle)
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    private func configure(_ pcm: OpaquePointer) throws(AudioCaptureError) {
        var hwOrNil: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&hwOrNil) == 0, let hw = hwOrNil else {
            throw AudioCaptureError(kind: .failed, device: device, detail: "out of memory")
        }
        defer { snd_pcm_hw_params_free(hw) }
        try check(snd_pcm_hw_params_any(pcm, hw), "snd_pcm_hw_params_any")
        // Let alsa-lib resample when the device cannot do 16 kHz itself (plug devices).
        try check(snd_pcm_hw_params_set_rate_resample(pcm, hw, 1), "set_rate_resample")
        try check(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "set_access interleaved")
        try check(snd_pcm_hw_params_set_format(pcm, hw, SND_PCM_FORMAT_S16_LE), "set_format S16_LE")
        try check(snd_pcm_hw_params_set_channels(pcm, hw, 1), "set_channels 1 (use a plug device such as 'default' or 'plughw:...' for a stereo-only card)")
        var rate = UInt32(sampleRate)
        try check(snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, nil), "set_rate \(sampleRate)")
        guard rate == UInt32(sampleRate) else {
            throw AudioCaptureError(kind: .failed, device: device,
                                    detail: "the device offers \(rate) Hz, not \(sampleRate) Hz: use a plug device such as 'default' or 'plughw:...'")
        }
        var buffer = snd_pcm_uframes_t(bufferFrames)
        try check(snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer), "set_buffer_size")
        var period = snd_pcm_uframes_t(periodFrames)
        var direction: Int32 = 0
        try check(snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, &direction), "set_period_size")
        try check(snd_pcm_hw_params(pcm, hw), "snd_pcm_hw_params")
        snd_pcm_hw_params_get_buffer_size(hw, &buffer)
        snd_pcm_hw_params_get_period_size(hw, &period, &direction)
        bufferFrames = Int(buffer)
        periodFrames = Int(period)

        var swOrNil: OpaquePointer?
        guard snd_pcm_sw_params_malloc(&swOrNil) == 0, let sw = swOrNil else {
            throw AudioCaptureError(kind: .failed, device: device, detail: "out of memory")
        }
        defer { snd_pcm_sw_params_free(sw) }
        try check(snd_pcm_sw_params_current(pcm, sw), "snd_pcm_sw_params_current")
        // Wake the reader once `wakeFrames` are there (whole periods, at most half the
        // buffer so a wake always leaves slack), not per sample group.
        let periods = max(1, min(wakeFrames, bufferFrames / 2) / max(periodFrames, 1))
        wakeFrames = periods * periodFrames
        try check(snd_pcm_sw_params_set_avail_min(pcm, sw, snd_pcm_uframes_t(wakeFrames)), "set_avail_min")
        try check(snd_pcm_sw_params(pcm, sw), "snd_pcm_sw_params")
        try check(snd_pcm_prepare(pcm), "snd_pcm_prepare")
        try check(snd_pcm_start(pcm), "snd_pcm_start")
    }

    public func read(into buffer: UnsafeMutableBufferPointer<Int16>) throws(AudioCaptureError) -> CaptureRead {
        guard let pcm, let base = buffer.baseAddress else {
            throw AudioCaptureError(kind: .failed, device: device, detail: "read after close")
        }
        let ready = snd_pcm_wait(pcm, Self.waitMilliseconds)
        if ready < 0 {
            return try recover(pcm, ready, during: "snd_pcm_wait")
        }
        if ready == 0 {
            emptyWaits += 1
            if emptyWaits >= Self.stalledAfterEmptyWaits {
                throw AudioCaptureError(kind: .stalled, device: device,
                                        detail: "no sample for \(emptyWaits * Int(Self.waitMilliseconds) / 1_000) s")
            }
            return .frames(0)
        }
        let got = snd_pcm_readi(pcm, base, snd_pcm_uframes_t(buffer.count))
        if got == -Int(EAGAIN) { return .frames(0) }
        if got < 0 {
            return try recover(pcm, Int32(got), during: "snd_pcm_readi")
        }
        emptyWaits = 0
        return .frames(Int(got))
    }

    /// An overrun (EPIPE) or a suspend (ESTRPIPE) is recovered in place: the stream goes
    /// on with a gap. Anything else means the device is gone or broken.
    private func recover(_ pcm: OpaquePointer, _ error: Int32, during call: String) throws(AudioCaptureError) -> CaptureRead {
        if error == -EPIPE || error == -ESTRPIPE || error == -EINTR {
            let recovered = snd_pcm_recover(pcm, error, 1)
            guard recovered >= 0 else {
                throw AudioCaptureError(errno: recovered, device: device, detail: "snd_pcm_recover after \(Self.message(error)): \(Self.message(recovered))")
            }
            if error == -EINTR { return .frames(0) }
            // A recovered capture PCM is prepared but not running until started again.
            _ = snd_pcm_start(pcm)
            return .overrun
        }
        throw AudioCaptureError(errno: error, device: device, detail: "\(call): \(Self.message(error))")
    }

    public var settingsDescription: String {
        "\(sampleRate) Hz mono S16_LE, period \(periodFrames) frames, buffer \(bufferFrames) frames, woken every \(wakeFrames) frames"
    }

    public func pendingFrames() -> Int {
        guard let pcm else { return 0 }
        var delay: snd_pcm_sframes_t = 0
        guard snd_pcm_delay(pcm, &delay) == 0 else { return 0 }
        return max(0, delay)
    }

    public func close() {
        if let pcm {
            snd_pcm_close(pcm)
            self.pcm = nil
        }
    }

    private func check(_ result: Int32, _ call: String) throws(AudioCaptureError) {
        guard result >= 0 else {
            throw AudioCaptureError(errno: result, device: device, detail: "\(call): \(Self.message(result))")
        }
    }

    static func message(_ error: Int32) -> String {
        snd_strerror(error).map { String(cString: $0) } ?? "error \(error)"
    }

    /// The factory the stream (and onboard's and doctor's check) uses: a card a sound
    /// server manages is never opened (`SoundCardGuard`).
    public static let factory: AudioCaptureFactory = { device, rate throws(AudioCaptureError) in
        if let refusal = SoundCardGuard().refusal(for: device) { throw refusal }
        return try ALSACapture(device: device, sampleRate: rate)
    }
}
