import Capture
import Foundation

/// The person's sound server (PipeWire, or PulseAudio's `pipewire-pulse` stand-in) and
/// its capture sources, for onboarding's list of microphones: everything onboarding knows
/// about sound servers is here (docs/streams/microphone.md, "Choosing the device").
///
/// A source is offered under the ALSA name that opens it through `pipewire-alsa`
/// (`pipewire:NODE=<source name>`), so only where that plugin's `pipewire` PCM is in the
/// ALSA configuration. Sources come from `pactl list sources` (pipewire-pulse) when the
/// person has a PipeWire session and `pactl` is installed; otherwise there are none
/// (ALSA's own list still has `default`). Finding the session is `SoundServerSession`'s.
struct SoundServerSources {
    /// The `pactl list sources` text, or nil when there is no PipeWire session for the
    /// person running onboard (`SoundServerSession`), no pactl, or no answer.
    var listing: () -> String? = {
        let sessions = SoundServerSession.find(runtimeDirectory: SoundServerSession.runtimeDirectory(uid: getuid()))
        guard sessions.contains(where: { $0.server == .pipewire }), let pactl = CommandOutput.find("pactl"),
              let result = CommandOutput.run(pactl, ["list", "sources"]), result.status == 0 else { return nil }
        return result.output
    }

    /// The sources as capture devices; empty when `alsaDevices` has no `pipewire` PCM.
    func captureDevices(alsaDevices: [CaptureDeviceHint]) -> [CaptureDeviceHint] {
        guard alsaDevices.contains(where: { $0.name == "pipewire" }), let text = listing() else { return [] }
        return Self.sources(inPactlListing: text).map {
            CaptureDeviceHint(name: "pipewire:NODE=\($0.name)", description: $0.description)
        }
    }

    /// The sources of a `pactl list sources` text, the monitors of outputs left out.
    static func sources(inPactlListing text: String) -> [(name: String, description: String)] {
        var sources: [(name: String, description: String)] = []
        var name: String?, description: String?, isMonitor = false
        func flush() {
            if let name, !isMonitor { sources.append((name, description ?? name)) }
            name = nil
            description = nil
            isMonitor = false
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("Source #") {
                flush()
            } else if trimmed.hasPrefix("Name: ") {
                name = String(trimmed.dropFirst("Name: ".count))
            } else if trimmed.hasPrefix("Description: ") {
                description = String(trimmed.dropFirst("Description: ".count))
            } else if trimmed.hasPrefix("Monitor of Sink: ") {
                isMonitor = trimmed != "Monitor of Sink: n/a"
            }
        }
        flush()
        return sources
    }
}
