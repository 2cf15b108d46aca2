import Capture
import Foundation
import Glibc
import TestRigs

/// The real ALSA capture of one of an `ALSARig`'s devices, paced to real time (the rig's
/// `file` plugin is not), that fails as the kernel fails a read from a USB card that was
/// pulled out (ENODEV) once the rig unplugs the device. Reads are at most a quarter of a
/// second, so an unplug is seen within that.
final class UnpluggableCapture: AudioCapture {
    private let inner: ALSACapture
    private let rig: ALSARig
    private let device: String
    private let opened = ProcessInfo.processInfo.systemUptime
    private var delivered = 0

    init(rig: ALSARig, device: String, sampleRate: Int) throws(AudioCaptureError) {
        inner = try ALSACapture(device: device, sampleRate: sampleRate)
        self.rig = rig
        self.device = device
    }

    var sampleRate: Int { inner.sampleRate }

    func read(into buffer: UnsafeMutableBufferPointer<Int16>) throws(AudioCaptureError) -> CaptureRead {
        let window = min(buffer.count, sampleRate / 4)
        let due = opened + Double(delivered + window) / Double(sampleRate)
        let ahead = due - ProcessInfo.processInfo.systemUptime
        if ahead > 0 { Thread.sleep(forTimeInterval: ahead) }
        guard rig.isPlugged(device) else {
            throw AudioCaptureError(errno: -ENODEV, device: device, detail: "snd_pcm_readi: No such device")
        }
        let result = try inner.read(into: UnsafeMutableBufferPointer(rebasing: buffer[0 ..< window]))
        if case .frames(let count) = result { delivered += count }
        return result
    }

    /// Paced to real time: what is read is what was just captured.
    func pendingFrames() -> Int { 0 }

    func close() { inner.close() }
}
