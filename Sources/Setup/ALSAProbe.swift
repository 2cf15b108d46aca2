import AgentCore
import CALSA
import Foundation

/// Can the capture device be opened? Opens it for capture with the agent's format
/// (16 kHz, mono, S16_LE) and closes it again.
struct ALSAProbe {
    let device: String

    func check() -> DeviceCheck {
        let name = "ALSA capture device \"\(device)\""
        var pcm: OpaquePointer?
        let (opened, diagnostics) = StderrCapture.during { snd_pcm_open(&pcm, device, SND_PCM_STREAM_CAPTURE, SND_PCM_NONBLOCK) }
        var rc = opened
        let alsaSaid = StderrCapture.firstALSAMessage(diagnostics).map { " (ALSA: \($0))" } ?? ""
        if rc == 0, let pcm {
            // Latency 500 ms, soft resampling allowed: only whether the format is possible matters here.
            rc = snd_pcm_set_params(pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, 1, 16_000, 1, 500_000)
            snd_pcm_close(pcm)
            if rc == 0 {
                return DeviceCheck(name: name, stream: .microphone, outcome: .ok, detail: "opens for 16 kHz mono capture")
            }
            return DeviceCheck(name: name, stream: .microphone, outcome: .failed,
                               detail: "opens but refuses 16 kHz mono S16_LE: \(String(cString: snd_strerror(rc)))",
                               fix: "use a plug device that converts, e.g. [microphone] device = \"plughw:CARD=…\" (see arecord -L)")
        }
        let reason = String(cString: snd_strerror(rc))
        switch -rc {
        case EACCES, EPERM:
            return DeviceCheck(name: name, stream: .microphone, outcome: .failed,
                               detail: "\(AgentErrorCode.permissionDenied.rawValue) permission denied: \(reason)",
                               fix: "sudo usermod -aG audio ariata (the service user), then restart the service")
        case EBUSY:
            return DeviceCheck(name: name, stream: .microphone, outcome: .failed, detail: "busy: another program holds it (\(reason))",
                               fix: "close the program using it (fuser -v /dev/snd/*), or capture through \"default\" (dsnoop/PipeWire)")
        default:
            return DeviceCheck(name: name, stream: .microphone, outcome: .failed, detail: "cannot open it: \(reason)\(alsaSaid)",
                               fix: "list capture devices with 'arecord -L' and set [microphone] device, or disable the microphone")
        }
    }
}
