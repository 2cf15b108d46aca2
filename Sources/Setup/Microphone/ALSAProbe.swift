import AgentCore
import Capture
import Foundation

/// Can the capture device be opened? Opens it exactly as the microphone stream does (the
/// same `ALSACapture`: 16 kHz, mono, S16_LE, the stream's period and buffer), so the check
/// and the stream can never disagree, and closes it again.
struct ALSAProbe {
    let device: String
    var open: AudioCaptureFactory = ALSACapture.factory

    func check() -> DeviceCheck {
        let name = "ALSA capture device \"\(device)\""
        // alsa-lib prints its own diagnostics to stderr: fold them into the message.
        let (outcome, diagnostics) = StderrCapture.during { () -> Result<Void, AudioCaptureError> in
            do throws(AudioCaptureError) {
                let capture = try open(device, 16_000)
                capture.close()
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        guard case .failure(let error) = outcome else {
            return DeviceCheck(name: name, stream: .microphone, outcome: .ok, detail: "opens for 16 kHz mono capture")
        }
        let alsaSaid = StderrCapture.firstALSAMessage(diagnostics).map { " (ALSA: \($0))" } ?? ""
        switch error.kind {
        case .permissionDenied:
            return DeviceCheck(name: name, stream: .microphone, outcome: .failed,
                               detail: "\(AgentErrorCode.permissionDenied.rawValue) permission denied: \(error.detail)",
                               fix: "sudo usermod -aG audio ariata (the service user), then restart the service")
        case .busy:
            return DeviceCheck(name: name, stream: .microphone, outcome: .failed, detail: "busy: another program holds it (\(error.detail))",
                               fix: "close the program using it (fuser -v /dev/snd/*), or capture through \"default\" (dsnoop/PipeWire)")
        case .notFound:
            return DeviceCheck(name: name, stream: .microphone, outcome: .failed, detail: "cannot open it: \(error.detail)\(alsaSaid)",
                               fix: "list capture devices with 'arecord -L' and set [microphone] device, or disable the microphone")
        case .soundServerUnreachable:
            return DeviceCheck(name: name, stream: .microphone, outcome: .failed,
                               detail: "goes to a sound server (PipeWire or PulseAudio) this user cannot reach: \(error.detail)\(alsaSaid)",
                               fix: "on a laptop or desktop run the agent as your user service: ariata-agent onboard --user-service (without sudo); on a board without a sound server set [microphone] device to a card from 'arecord -L'")
        case .managedBySoundServer:
            return DeviceCheck(name: name, stream: .microphone, outcome: .warning,
                               detail: "not opened: \(error.detail); the agent does not take a card from the sound server (it would take the microphone from your calls)",
                               fix: "set [microphone] device = \"default\" (or \"pipewire\") and run the agent as your user service: ariata-agent onboard --user-service")
        case .failed, .stalled:
            return DeviceCheck(name: name, stream: .microphone, outcome: .failed,
                               detail: "opens but refuses 16 kHz mono S16_LE: \(error.detail)\(alsaSaid)",
                               fix: "use a plug device that converts, e.g. [microphone] device = \"plughw:CARD=…\" (see arecord -L)")
        }
    }
}
