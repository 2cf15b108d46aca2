import AgentCore
import Capture
import Foundation

/// Onboarding's choice of microphone: lists the capture devices (ALSA's device hints and
/// the sound server's sources, each with a readable name), lets the person pick one by
/// number or name, checks that it opens, and sets `[microphone] device`
/// (docs/streams/microphone.md, "Choosing the device, and falling back").
/// `--microphone-device` chooses without asking; with `--yes` the current one is kept.
struct MicrophoneStep {
    /// `--microphone-device`.
    var requested: String?
    var prompter: any Prompter
    var console: Console
    var printer: CheckPrinter
    var alsaDevices: () -> [CaptureDeviceHint] = ALSADeviceHints.captureDevices
    var soundServer = SoundServerSources()
    var probe: (String) -> DeviceCheck = { ALSAProbe(device: $0).check() }

    func run(_ microphone: inout MicrophoneConfig) throws {
        if let requested {
            microphone.device = requested
            console.line("  microphone: \"\(requested)\" (--microphone-device)")
            note(microphone)
            return
        }
        guard microphone.enabled else { return }
        let alsa = alsaDevices()
        let devices = alsa + soundServer.captureDevices(alsaDevices: alsa)
        console.line("  Capture devices:")
        let width = String(devices.count).count
        for (number, device) in zip(1..., devices) {
            let label = String(number).padding(toLength: width, withPad: " ", startingAt: 0)
            let current = device.name == microphone.device ? "   (current)" : ""
            console.line("    \(label)  \(device.name)  \(device.description)\(current)")
        }
        if devices.isEmpty { console.line("    none listed by ALSA (arecord -L); a device name can still be given") }
        guard prompter.isInteractive else {
            console.line("  microphone: \"\(microphone.device)\" kept (--microphone-device chooses another)")
            note(microphone)
            return
        }
        while true {
            let answer = try prompter.ask("  Microphone (a number from the list, or an ALSA device name)", default: microphone.device)
            var name = answer
            if let number = Int(answer) {
                guard devices.indices.contains(number - 1) else {
                    console.line("  there is no device \(number): give a number from 1 to \(devices.count), or a device name")
                    continue
                }
                name = devices[number - 1].name
            }
            let check = probe(name)
            console.write(printer.render(check))
            // A microphone that is not plugged in yet may still be the right one: capture
            // starts when it appears (and uses the fallback meanwhile).
            if try check.outcome == .ok || !prompter.confirm("  Choose another microphone?", default: true) {
                microphone.device = name
                break
            }
        }
        note(microphone)
    }

    /// What happens while the chosen microphone is missing.
    private func note(_ microphone: MicrophoneConfig) {
        if let fallback = microphone.fallback {
            console.line("  while it is missing, capture falls back to \"\(fallback)\" ([microphone] fallback_device)")
        }
    }
}
