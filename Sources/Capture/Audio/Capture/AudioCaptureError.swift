import AgentCore
import Glibc

/// Why a capture device could not be opened or stopped working, with what the user can do.
public struct AudioCaptureError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// No such device, or no such PCM in the ALSA configuration (ENOENT, ENODEV, ENXIO).
        case notFound
        /// Another program holds the device (EBUSY).
        case busy
        /// The service user may not open the device (EACCES, EPERM): E005.
        case permissionDenied
        /// The device does not do what we ask (16 kHz mono S16_LE), or another failure.
        case failed
        /// The device delivered nothing for too long.
        case stalled
        /// The device goes to a sound server (PipeWire, PulseAudio) this user has no
        /// session of (EHOSTDOWN, ECONNREFUSED): a system service on a desktop.
        case soundServerUnreachable
        /// The device opens a card a sound server manages: not opened, so the card stays
        /// the sound server's (`SoundCardGuard`).
        case managedBySoundServer
    }

    public var kind: Kind
    public var device: String
    /// The failing call and the library's message.
    public var detail: String

    public init(kind: Kind, device: String, detail: String) {
        self.kind = kind
        self.device = device
        self.detail = detail
    }

    /// Maps a negative errno from libasound to the kind a user can act on.
    public init(errno code: Int32, device: String, detail: String) {
        let kind: Kind
        switch -code {
        case ENOENT, ENODEV, ENXIO: kind = .notFound
        case EBUSY: kind = .busy
        case EACCES, EPERM: kind = .permissionDenied
        case EHOSTDOWN, ECONNREFUSED: kind = .soundServerUnreachable
        default: kind = .failed
        }
        self.init(kind: kind, device: device, detail: detail)
    }

    public var code: AgentErrorCode? {
        kind == .permissionDenied ? .permissionDenied : nil
    }

    /// The reason shown in `status` and the log: what happened and what to do.
    public var description: String {
        switch kind {
        case .notFound:
            return "ALSA capture device '\(device)' not found (\(detail)): plug the microphone in or set [microphone] device to a name from 'arecord -L'; retrying"
        case .busy:
            return "ALSA capture device '\(device)' is busy (\(detail)): another program holds it; use a shared device such as 'default' or 'dsnoop'; retrying"
        case .permissionDenied:
            return "\(AgentErrorCode.permissionDenied.rawValue) permission denied opening ALSA capture device '\(device)' (\(detail)): add the service user to the 'audio' group (sudo usermod -aG audio <user>) and restart the agent; retrying"
        case .failed:
            return "ALSA capture device '\(device)' failed (\(detail)); retrying"
        case .stalled:
            return "ALSA capture device '\(device)' delivers no audio (\(detail)); reopening"
        case .soundServerUnreachable:
            return "ALSA capture device '\(device)' goes to a sound server (PipeWire or PulseAudio) that \(Self.processUser) cannot reach (\(detail)): "
                + "a sound server serves only the session of the person logged in, and a system service has none. "
                + "On a laptop or desktop run the agent as that person's user service (ariata-agent onboard --user-service, docs/install.md); "
                + "on a board without a sound server use the card (arecord -L); retrying"
        case .managedBySoundServer:
            return "ALSA capture device '\(device)' not opened: \(detail), and holding the card would take the microphone from its other programs (calls) "
                + "or fail whenever they use it. Set [microphone] device = \"default\" (or \"pipewire\") and run the agent as the desktop user's service "
                + "(ariata-agent onboard --user-service, docs/install.md); retrying"
        }
    }

    /// Who this process runs as, for the messages.
    static var processUser: String {
        getpwuid(getuid()).map { "user '\(String(cString: $0.pointee.pw_name))'" } ?? "uid \(getuid())"
    }

    public var liveness: Liveness {
        .unhealthy(reason: description, code: code)
    }
}
