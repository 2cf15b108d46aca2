import CALSA
import Foundation
import Glibc

/// A PCM a person can capture from, as ALSA's device hints describe it (`arecord -L`).
public struct CaptureDeviceHint: Sendable, Equatable {
    /// The name to open (`[microphone] device`).
    public var name: String
    /// The hint's description, its lines joined: "USB Audio Device, USB Audio".
    public var description: String

    public init(name: String, description: String) {
        self.name = name
        self.description = description
    }
}

/// The capture PCMs ALSA's configuration offers (`snd_device_name_hint`, what `arecord
/// -L` lists): the cards' `hw:`/`plughw:`/`dsnoop:` names, `default`, and the sound
/// server's PCM (`pipewire`, `pulse`) where its ALSA plugin is installed. `null` (which
/// captures silence) and playback-only PCMs are left out.
public enum ALSADeviceHints {
    public static func captureDevices() -> [CaptureDeviceHint] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) == 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        var devices: [CaptureDeviceHint] = []
        var index = 0
        while let hint = hints[index] {
            index += 1
            func value(_ id: String) -> String? {
                guard let text = snd_device_name_get_hint(hint, id) else { return nil }
                defer { free(text) }
                return String(cString: text)
            }
            // IOID is absent for PCMs that do both directions.
            guard let name = value("NAME"), name != "null", value("IOID") != "Output" else { continue }
            let lines = (value("DESC") ?? "").split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            devices.append(CaptureDeviceHint(name: name, description: lines.isEmpty ? name : lines.joined(separator: ", ")))
        }
        return devices
    }
}
