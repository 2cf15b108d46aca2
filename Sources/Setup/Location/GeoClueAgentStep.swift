import AgentCore
import Foundation

/// Onboarding as the system service, where location may come from GeoClue: on GeoClue 2.7
/// and later, puts ariata-agent on GeoClue's agent whitelist with a drop-in and restarts
/// GeoClue so it reads it. On 2.6 the device check names the line to change instead
/// (docs/laptop.md, "GeoClue's agent whitelist").
struct GeoClueAgentStep {
    let whitelist: GeoClueAgentWhitelist
    let console: Console

    func run(_ location: LocationConfig) {
        guard location.enabled, location.source != .gpsd, whitelist.version != nil, !whitelist.allowsTheAgent,
              whitelist.readsDropIns else { return }
        do {
            guard let file = try whitelist.writeDropIn() else { return }
            console.line("  wrote \(file): ariata-agent may act as its own GeoClue agent")
            if FileManager.default.fileExists(atPath: "/run/systemd/system") {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/systemctl")
                process.arguments = ["try-restart", "geoclue.service"]
                if (try? process.run()) != nil { process.waitUntilExit() }
            }
        } catch {
            console.line("  cannot write \(whitelist.dropInFile): \(error); \(whitelist.remedy)")
        }
    }
}
